package reap

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Changed collects, without blocking, every child whose state changed and
// calls f for each, in the order the kernel hands them out. f sees every
// change (exits, kills, and stops of a traced child); callers that only
// care about ends check ws.Exited() || ws.Signaled(). SIGCHLD coalesces,
// so one signal may stand for many changes: call Changed until it is
// done, never once per signal.
//
// It reports whether children are left: false once wait4 says ECHILD.
// __WALL takes clone children that do not signal SIGCHLD on exit too.
func Changed(f func(pid int, ws unix.WaitStatus)) (childrenLeft bool) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG|unix.WALL, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil: // ECHILD: no children at all
			return false
		case pid <= 0: // children, none of them changed
			return true
		}
		f(pid, ws)
	}
}

// Ended reports whether ws is a final status: the child exited or was
// killed (not stopped or continued).
func Ended(ws unix.WaitStatus) bool { return ws.Exited() || ws.Signaled() }
