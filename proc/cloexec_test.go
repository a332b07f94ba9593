//go:build linux

package proc

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// inheritable opens a pipe whose write end has close-on-exec cleared, as
// a descriptor inherited from a shell would.
func inheritable(t *testing.T) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	return w
}

func cloexec(t *testing.T, f *os.File) bool {
	t.Helper()
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.FD_CLOEXEC != 0
}

func TestCloseOnExecFrom(t *testing.T) {
	for _, c := range []struct {
		name string
		mark func(first int) error
	}{{"close_range", CloseOnExecFrom}, {"/proc/self/fd", cloexecProcFDs}} {
		t.Run(c.name, func(t *testing.T) {
			low, high := inheritable(t), inheritable(t)
			if low.Fd() > high.Fd() {
				low, high = high, low
			}
			if err := c.mark(int(high.Fd())); err != nil {
				t.Fatal(err)
			}
			if !cloexec(t, high) {
				t.Errorf("fd %d: not marked close-on-exec", high.Fd())
			}
			if cloexec(t, low) {
				t.Errorf("fd %d, below the first: marked close-on-exec", low.Fd())
			}
			if _, err := high.Write([]byte("x")); err != nil {
				t.Errorf("a marked descriptor must stay usable: %v", err)
			}
		})
	}
}

// TestInitDoesNotPassInheritedFDs: a descriptor the init inherited (a
// secret on fd 7) does not reach the program it starts.
func TestInitDoesNotPassInheritedFDs(t *testing.T) {
	if runtimeOpen.Load() {
		t.Fatal("a Runtime is open")
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("the secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := filepath.Join(t.TempDir(), "out")
	o, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	exe, _ := os.Executable()
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	files := []uintptr{null.Fd(), o.Fd(), o.Fd(), f.Fd(), f.Fd(), f.Fd(), f.Fd(), f.Fd()}
	pid, err := syscall.ForkExec(exe, []string{initArgv0, roleRun, "sh", "-c", "ls /proc/self/fd | tr '\\n' ' '; echo; cat <&7; cat <&3; echo done"},
		&syscall.ProcAttr{Env: []string{"PATH=" + defaultPath}, Files: files})
	if err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if !strings.Contains(string(b), "done") {
		t.Fatalf("the program did not run: %s", b)
	}
	if strings.Contains(string(b), "the secret") {
		t.Errorf("the program read a descriptor the init inherited:\n%s", b)
	}
}
