package sockets

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// freePort is a loopback TCP port no one listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func mustOpen(t *testing.T, raw string) *Socket {
	t.Helper()
	s, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := Open(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sk.Close() })
	return sk
}

func TestOpenTCP(t *testing.T) {
	addr := freePort(t)
	sk := mustOpen(t, "tcp://"+addr+"?backlog=7")
	fd := int(sk.file.Fd())
	if v, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR); v != 1 {
		t.Error("SO_REUSEADDR is not set")
	}
	if v, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT); v != 0 {
		t.Error("SO_REUSEPORT is set by default")
	}
	flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if flags&unix.FD_CLOEXEC == 0 {
		t.Error("the held socket is not close-on-exec")
	}
	fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if fl&unix.O_NONBLOCK != 0 {
		t.Error("the socket is non-blocking; programs expect a blocking one")
	}
	// A second bind of the same address fails while we hold it.
	s := sk.Spec()
	if _, err := Open(s); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("second Open = %v, want EADDRINUSE", err)
	}
	// A copy accepts what connects to the address.
	dup, err := sk.Dup()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.FileListener(dup)
	dup.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	a, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
}

func TestOpenUnix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.sock")
	sk := mustOpen(t, "unix://"+path+"?mode=0640&owner=65534&group=65534")
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o640 || fi.Mode().Type() != os.ModeSocket {
		t.Errorf("socket file mode %v, want a socket 0640", fi.Mode())
	}
	if os.Geteuid() == 0 && (st.Uid != 65534 || st.Gid != 65534) {
		t.Errorf("socket owned by %d:%d, want 65534:65534", st.Uid, st.Gid)
	}
	// The mode changes in place.
	n := sk.Spec()
	n.Mode = 0o600
	if same, err := sk.Update(n); !same || err != nil {
		t.Fatalf("Update = %v, %v", same, err)
	}
	if fi, _ := os.Lstat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("after Update, mode %v", fi.Mode())
	}
	// Someone answers on it: a second Open refuses, and leaves it.
	if _, err := Open(sk.Spec()); err == nil || !strings.Contains(err.Error(), "answers on it") {
		t.Errorf("Open of a live socket = %v", err)
	}
	if err := sk.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("Close left the socket file: %v", err)
	}
}

func TestOpenUnixStaleAndForeign(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.sock")
	// A stale socket (its listener gone without removing it) is replaced.
	fd, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	mustOpen(t, "unix://"+path)

	other := filepath.Join(dir, "file")
	os.WriteFile(other, nil, 0o600)
	s, _ := Parse("unix://" + other)
	if _, err := Open(s); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Open over a regular file = %v", err)
	}
}

func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	if err := CheckDir(filepath.Join(dir, "a.sock")); err != nil {
		t.Errorf("private directory: %v", err)
	}
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	if err := CheckDir(filepath.Join(open, "a.sock")); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("world-writable directory: %v", err)
	}
	if err := CheckDir(filepath.Join(open, "sub", "a.sock")); err == nil {
		t.Error("a missing directory passed")
	}
	if err := CheckDir("/tmp/a.sock"); err == nil {
		t.Error("/tmp passed")
	}
}
