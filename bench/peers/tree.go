//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The driver is a child subreaper (main sets it): whatever a supervisor
// leaves behind when it exits is re-parented to the driver, so cleanup
// finds it as a descendant and nothing escapes the run.
//
// Waiting: the driver forks supervisor roots with ForkExec and reaps with
// Wait4 itself. Short control commands (sv, svc, s6-svscanctl) run with
// exec.Cmd.Run, always to completion before anything else waits, so the
// two never race for an exit status.

// tree is one running supervisor: its root process and where its files are.
type tree struct {
	impl  string
	dir   string
	pid   int
	log   *os.File // the supervisor's stdout and stderr
	ended bool
}

// startRoot forks argv as the root of a supervision tree, in its own
// process group, with stdout and stderr to dir/NAME.out.
func startRoot(impl, dir string, argv []string, env []string) (*tree, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", impl, err)
	}
	log, err := os.Create(dir + "/" + impl + ".out")
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", impl, err)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		log.Close()
		return nil, err
	}
	defer null.Close()
	t := &tree{impl: impl, dir: dir, log: log}
	t.pid, err = syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{null.Fd(), log.Fd(), log.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", impl, err)
	}
	return t, nil
}

// alive says whether the root still runs (not exited; it may be a zombie
// not yet reaped).
func (t *tree) alive() bool {
	if t.ended {
		return false
	}
	var ws unix.WaitStatus
	pid, err := unix.Wait4(t.pid, &ws, unix.WNOHANG, nil)
	if pid == t.pid || errors.Is(err, unix.ECHILD) {
		t.ended = true
		return false
	}
	return true
}

// waitRoot waits up to timeout for the root to exit and reaps it.
func (t *tree) waitRoot(timeout time.Duration) bool {
	if t.ended {
		return true
	}
	fd, err := unix.PidfdOpen(t.pid, 0)
	if err == nil {
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		deadline := time.Now().Add(timeout)
		for time.Now().Before(deadline) {
			_, err := unix.Poll(fds, int(time.Until(deadline)/time.Millisecond)+1)
			if err == nil && fds[0].Revents != 0 || err != nil && !errors.Is(err, unix.EINTR) {
				break
			}
		}
	}
	return !t.alive()
}

// tail is the end of the supervisor's own output, for error messages.
func (t *tree) tail() string {
	b, err := os.ReadFile(t.log.Name())
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

// close ends what is left of the tree: after the peer's own shutdown had
// its chance, everything below the driver is killed and reaped.
func (t *tree) close() {
	if !t.waitRoot(0) {
		_ = syscall.Kill(t.pid, syscall.SIGKILL)
	}
	killDescendants()
	t.alive()
	t.log.Close()
}

// killDescendants SIGKILLs every process below the driver and reaps them,
// until none is left. Each is signalled through a pidfd opened after its
// identity (pid and start time) was read, so a reused pid is never hit.
func killDescendants() {
	self := os.Getpid()
	for try := 0; try < 200; try++ {
		reapAll()
		all, err := listProcs()
		if err != nil {
			return
		}
		left := descendants(all, self)[1:]
		if len(left) == 0 {
			return
		}
		for _, p := range left {
			if p.State == 'Z' {
				continue
			}
			fd, err := unix.PidfdOpen(p.Pid, 0)
			if err != nil {
				continue
			}
			if now, err := readStat(p.Pid); err == nil && now.Start == p.Start {
				_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
			unix.Close(fd)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, "peers: warning: processes left below the driver after 200 tries")
}

// reapAll collects every exited child of the driver without blocking.
func reapAll() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// run runs a control command to completion, in dir.
func run(dir string, argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv[:min(len(argv), 3)], " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
