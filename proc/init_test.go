//go:build linux

package proc

import (
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// runInit runs the test binary as the tini-like init ("run" role) over
// argv, outside any Runtime (none may be open: this test waits itself).
func runInit(t *testing.T, sys *syscall.SysProcAttr, signalAfter syscall.Signal, stdout *os.File, ready <-chan string, argv ...string) syscall.WaitStatus {
	t.Helper()
	exe, _ := os.Executable()
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	out := null
	if stdout != nil {
		out = stdout
	}
	pid, err := syscall.ForkExec(exe, append([]string{initArgv0, roleRun}, argv...), &syscall.ProcAttr{
		Env: []string{"PATH=" + defaultPath}, Files: []uintptr{null.Fd(), out.Fd(), null.Fd()}, Sys: sys,
	})
	if err != nil {
		t.Fatal(err)
	}
	if signalAfter != 0 {
		select {
		case <-ready:
		case <-time.After(60 * time.Second):
			t.Fatal("not ready")
		}
		if err := syscall.Kill(pid, signalAfter); err != nil {
			t.Fatal(err)
		}
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	return ws
}

func TestRunInit(t *testing.T) {
	if runtimeOpen.Load() {
		t.Fatal("a Runtime is open")
	}
	ws := runInit(t, &syscall.SysProcAttr{}, 0, nil, nil, "sh", "-c", "exit 7")
	if !ws.Exited() || ws.ExitStatus() != 7 {
		t.Errorf("exit 7: got %v", ws)
	}
	ws = runInit(t, &syscall.SysProcAttr{}, 0, nil, nil, "sh", "-c", "kill -USR2 $$")
	if !ws.Signaled() || ws.Signal() != syscall.SIGUSR2 {
		t.Errorf("killed by USR2: got %v, want the same signal re-raised", ws)
	}
	if os.Geteuid() != 0 {
		t.Skip("pid namespace needs root")
	}
	// As PID 1 of a pid namespace: a signal to the init reaches the
	// program's group, and zombies of orphans are reaped.
	out, ch := lines(t)
	ws = runInit(t, &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID}, syscall.SIGTERM, out, ch,
		"sh", "-c", `(sleep 0.1 &) ; trap "exit 9" TERM; echo ready; while :; do sleep 0.05; done`)
	if !ws.Exited() || ws.ExitStatus() != 9 {
		t.Errorf("TERM forwarded to a trapping program: got %v, want exit 9", ws)
	}
	ws = runInit(t, &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID}, 0, nil, nil, "sh", "-c", "kill -KILL $$")
	if !ws.Exited() || ws.ExitStatus() != 128+9 {
		t.Errorf("as PID 1, killed program: got %v, want exit 137 (a namespace's init ignores its own signals)", ws)
	}
}
