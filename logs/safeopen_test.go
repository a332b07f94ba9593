package logs

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var nobody = &Ident{UID: 65534, GID: 65534}

// programDir makes a log directory owned by the program's user (nobody),
// as a user who may write its own logs has, and a root-owned file outside
// it standing for /etc/cron.d/x.
func programDir(t *testing.T) (dir, secret string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the attack is a program as another user against a root supervisor")
	}
	root := t.TempDir()
	must(t, os.Chmod(root, 0o755))
	dir = filepath.Join(root, "logs")
	must(t, os.Mkdir(dir, 0o755))
	must(t, os.Chown(dir, nobody.UID, nobody.GID))
	secret = filepath.Join(t.TempDir(), "cron")
	must(t, os.WriteFile(secret, []byte("root's\n"), 0o644))
	return dir, secret
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func unchanged(t *testing.T, path string) {
	t.Helper()
	if b, err := os.ReadFile(path); err != nil || string(b) != "root's\n" {
		t.Fatalf("%s now holds %q (%v): the supervisor wrote through the program's link", path, b, err)
	}
}

// The program replaces its log with a symlink to a root file; the next
// open (a rotation, a reopen) must not write there.
func TestLogSymlinkSwapIsNotFollowed(t *testing.T) {
	dir, secret := programDir(t)
	path := filepath.Join(dir, "out.log")
	var warnings bytes.Buffer
	f, err := OpenFile(FileConfig{Path: path, MaxSize: 100, MaxFiles: 2, User: nobody, BufferSize: 1,
		Logger: slog.New(slog.NewTextHandler(&warnings, nil))})
	must(t, err)
	defer f.Close()
	for round := range 3 {
		os.Remove(path)
		must(t, os.Symlink(secret, path))
		must(t, os.Lchown(path, nobody.UID, nobody.GID))
		must(t, os.Symlink(secret, path+".1.tmp"))
		must(t, os.Rename(path+".1.tmp", path+".1"))
		// A reopen (SIGUSR2, logrotate) right after the swap, then enough
		// lines for rotations.
		f.Reopen()
		for i := range 20 {
			f.WriteLine(Line{Text: strings.Repeat("x", 20) + string(rune('a'+i%26))})
		}
		unchanged(t, secret)
		if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
			t.Fatalf("round %d: %s is %v (%v), want a regular file", round, path, st.Mode(), err)
		}
	}
	// What the program did is said (the 1st, 2nd, 4th … time).
	if n := strings.Count(warnings.String(), `"log file: removed what stood at its name" path=`+path+" was=\"a symlink\""); n < 2 {
		t.Errorf("%d warnings of a removed symlink, want at least 2 for 3 swaps:\n%s", n, warnings.String())
	}
}

// A hard link to a root file planted as the log is not appended to.
func TestLogHardLinkIsNotAppendedTo(t *testing.T) {
	dir, _ := programDir(t)
	// A hard link needs the same file system: the root file lives beside.
	secret := filepath.Join(filepath.Dir(dir), "cron")
	must(t, os.WriteFile(secret, []byte("root's\n"), 0o644))
	path := filepath.Join(dir, "out.log")
	must(t, os.Link(secret, path))
	f, err := OpenFile(FileConfig{Path: path, User: nobody})
	must(t, err)
	f.WriteLine(Line{Text: "program output"})
	must(t, f.Close())
	unchanged(t, secret)
}

// A FIFO at the log's name must neither block the open (the pump, and so
// the program's stop) nor receive the output.
func TestLogFIFODoesNotBlock(t *testing.T) {
	dir, _ := programDir(t)
	path := filepath.Join(dir, "out.log")
	must(t, unix.Mkfifo(path, 0o666))
	done := make(chan error, 1)
	go func() {
		f, err := OpenFile(FileConfig{Path: path, User: nobody})
		if err == nil {
			f.WriteLine(Line{Text: "x"})
			err = f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("opening a log file at a FIFO blocked")
	}
	if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("%s: %v %v, want a regular file in place of the FIFO", path, st.Mode(), err)
	}
}

// Directories planted at the rotated names make every rename fail: the
// file must still stay within max_size, and never be reopened by path.
func TestLogRotationBlockedStillBoundsSize(t *testing.T) {
	dir, _ := programDir(t)
	path := filepath.Join(dir, "out.log")
	for _, n := range []string{".1", ".2"} {
		must(t, os.MkdirAll(filepath.Join(path+n, "full"), 0o755))
	}
	const maxSize = 1000
	f, err := OpenFile(FileConfig{Path: path, MaxSize: maxSize, MaxFiles: 3, User: nobody, BufferSize: 1})
	must(t, err)
	for range 500 {
		f.WriteLine(Line{Text: strings.Repeat("y", 49)})
	}
	must(t, f.Close())
	st, err := os.Stat(path)
	must(t, err)
	if st.Size() > maxSize {
		t.Fatalf("%s is %d bytes, max_size %d", path, st.Size(), maxSize)
	}
}

func TestLogDirectoryChecks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	root := t.TempDir()
	must(t, os.Chmod(root, 0o755))
	mk := func(name string, mode os.FileMode, uid, gid int) string {
		d := filepath.Join(root, name)
		must(t, os.Mkdir(d, 0o700))
		must(t, os.Chmod(d, mode))
		must(t, os.Chown(d, uid, gid))
		return filepath.Join(d, "out.log")
	}
	for _, c := range []struct {
		name string
		path string
		user *Ident
		want string // "" = accepted
	}{
		{"world-writable", mk("ww", 0o777, 0, 0), nobody, "writable by every user"},
		{"sticky tmp-like", mk("tmp", 0o1777, 0, 0), nil, "writable by every user"},
		{"group-writable", mk("gw", 0o775, 0, 4242), nobody, "writable by group 4242"},
		{"root's group", mk("rg", 0o775, 0, 0), nil, ""},
		{"another user's", mk("other", 0o755, 4242, 4242), nobody, "owned by uid 4242"},
		{"the program's", mk("prog", 0o755, 65534, 65534), nobody, ""},
		{"the program's, no user given", mk("prog2", 0o755, 65534, 65534), nil, "owned by uid 65534"},
		{"root's", mk("root", 0o755, 0, 0), nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := OpenFile(FileConfig{Path: c.path, User: c.user})
			if c.want == "" {
				must(t, err)
				f.Close()
				return
			}
			if err == nil {
				f.Close()
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// A symlink on the way to the log directory is followed only when root
// made it: the program's user could point its own at /etc.
func TestLogDirectorySymlinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	root := t.TempDir()
	target := filepath.Join(root, "real")
	must(t, os.Mkdir(target, 0o755))
	rootLink := filepath.Join(root, "rootlink")
	must(t, os.Symlink(target, rootLink))
	f, err := OpenFile(FileConfig{Path: filepath.Join(rootLink, "sub", "out.log")})
	must(t, err)
	f.WriteLine(Line{Text: "via root's link"})
	must(t, f.Close())
	if _, err := os.Stat(filepath.Join(target, "sub", "out.log")); err != nil {
		t.Fatalf("root's symlink not followed: %v", err)
	}

	userLink := filepath.Join(root, "userlink")
	must(t, os.Symlink(target, userLink))
	must(t, os.Lchown(userLink, nobody.UID, nobody.GID))
	if _, err := OpenFile(FileConfig{Path: filepath.Join(userLink, "out.log")}); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Fatalf("a symlink of nobody's: got %v", err)
	}
	if _, err := os.Stat(filepath.Join(target, "out.log")); err == nil {
		t.Fatal("wrote through nobody's symlink")
	}
}

func TestLogFileModes(t *testing.T) {
	root := t.TempDir()
	private := filepath.Join(root, "private")
	must(t, os.Mkdir(private, 0o750))
	listable := filepath.Join(root, "listable")
	must(t, os.Mkdir(listable, 0o755))
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	for dir, want := range map[string]os.FileMode{private: 0o640, listable: 0o600} {
		p := filepath.Join(dir, "out.log")
		f, err := OpenFile(FileConfig{Path: p})
		must(t, err)
		must(t, f.Close())
		st, err := os.Stat(p)
		must(t, err)
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", p, st.Mode().Perm(), want)
		}
	}
}
