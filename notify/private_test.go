package notify

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: gives sockets and directories to another uid")
	}
}

// A base directory another user could use against us is refused: theirs,
// writable by all without the sticky bit, or a symlink.
func TestListenPrivateRefusesSquattedBase(t *testing.T) {
	needRoot(t)
	parent := t.TempDir()
	theirs := filepath.Join(parent, "theirs")
	open := filepath.Join(parent, "open")
	link := filepath.Join(parent, "link")
	for _, d := range []string{theirs, open} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	for base, want := range map[string]string{
		theirs: "belongs to uid 65534",
		open:   "writable by others",
		link:   "not a directory",
	} {
		s, err := ListenPrivate(base, "web", nil)
		if err == nil {
			s.Close()
			t.Errorf("%s: accepted", filepath.Base(base))
		} else if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", filepath.Base(base), err, want)
		}
	}
}

// The socket sits in a fresh 0711 directory of ours, mode 0600 and owned
// by the program's user, so that it (and only it, of the other users) can
// send; Close removes both.
func TestListenPrivateModes(t *testing.T) {
	needRoot(t)
	base := t.TempDir()
	if err := os.Chmod(base, 0o777|os.ModeSticky); err != nil { // like /tmp
		t.Fatal(err)
	}
	s, err := ListenPrivate(base, "web:0-with-a-long-name-for-the-socket-address", &Owner{UID: 65534, GID: 65534})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(s.Path())
	dst, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if dst.Mode().Perm() != 0o711 || dst.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
		t.Errorf("socket directory: mode %v uid %d, want 0711 and ours", dst.Mode().Perm(), dst.Sys().(*syscall.Stat_t).Uid)
	}
	sst, err := os.Lstat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if sst.Mode().Perm() != 0o600 || sst.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Errorf("socket: mode %v uid %d, want 0600 and uid 65534", sst.Mode().Perm(), sst.Sys().(*syscall.Stat_t).Uid)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("socket directory left after Close: %v", err)
	}
}

// Only the program's processes speak for it: a process below one of the
// roots is, and we (no root, no cgroup) are not.
func TestFromProgram(t *testing.T) {
	if !FromProgram(os.Getpid(), "", os.Getppid()) {
		t.Error("a child of a root is not taken as the program's")
	}
	if !FromProgram(os.Getpid(), "", os.Getpid()) {
		t.Error("a root itself is not taken as the program's")
	}
	if FromProgram(os.Getpid(), "", 0) || FromProgram(0, "", os.Getpid()) {
		t.Error("a sender with no root, or pid 0, taken as the program's")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("12\n"+strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !FromProgram(os.Getpid(), dir) || FromProgram(os.Getppid(), dir) {
		t.Error("cgroup.procs membership not read")
	}
}
