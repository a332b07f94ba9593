package proc

import (
	"errors"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/supervise-dev/supervise/internal/reap"
)

// exitFunc receives a child's wait status. It runs on the reaper goroutine
// with the registry locked, so it must not block nor call back into the
// reaper. Stops (of a ptraced child) are reported too; the entry stays
// registered until the child exited or was killed.
type exitFunc func(ws unix.WaitStatus)

// reaper is the one owner of wait4 in its process. Every child is forked
// through spawn, which holds the registry lock across the fork and the
// registration, and the reaper holds the same lock while it reaps: an exit
// can never be collected before its pid is known, and a pid that is still
// registered has not been reaped, so it cannot have been reused. Unknown
// pids are orphans re-parented to us (we are PID 1 or a subreaper) and are
// reaped silently. Nothing else in the process may wait for children
// (no exec.Cmd.Wait, no os.Process.Wait): it would steal exits.
type reaper struct {
	sigs chan os.Signal
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	waiting map[int]exitFunc // guarded by mu

	orphans atomic.Int64 // orphans reaped so far
}

// newReaper starts the reaper; waiting are children it must report
// (adopted ones), registered before its first wait.
func newReaper(waiting map[int]exitFunc) *reaper {
	if waiting == nil {
		waiting = make(map[int]exitFunc)
	}
	r := &reaper{
		sigs:    make(chan os.Signal, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		waiting: waiting,
	}
	signal.Notify(r.sigs, unix.SIGCHLD)
	go r.run()
	return r
}

func (r *reaper) run() {
	defer close(r.done)
	r.reapAll() // children that exited before Notify took effect
	for {
		select {
		case <-r.sigs:
			r.reapAll()
		case <-r.stop:
			return
		}
	}
}

// reapAll collects every child that has changed state. SIGCHLD coalesces,
// so one signal may stand for many exits.
func (r *reaper) reapAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	reap.Changed(func(pid int, ws unix.WaitStatus) {
		f, ok := r.waiting[pid]
		if !ok {
			if reap.Ended(ws) {
				r.orphans.Add(1)
			}
			return
		}
		if reap.Ended(ws) {
			delete(r.waiting, pid)
		}
		f(ws)
	})
}

// spawn forks with the registry locked and registers the child's pid with
// onExit before anyone can reap it.
func (r *reaper) spawn(fork func() (int, error), onExit exitFunc) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := fork()
	if err != nil {
		return 0, err
	}
	r.waiting[pid] = onExit
	return pid, nil
}

// kill sends sig to pid (or to its process group when group is set) only
// if pid is still registered: an unreaped pid cannot have been reused, so
// the signal cannot hit a stranger. It returns ErrProcessDone otherwise.
func (r *reaper) kill(pid int, group bool, sig unix.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.waiting[pid]; !ok {
		return ErrProcessDone
	}
	target := pid
	if group {
		target = -pid
	}
	err := unix.Kill(target, sig)
	if errors.Is(err, unix.ESRCH) && group {
		// The group is empty but its leader is an unreaped zombie.
		return nil
	}
	return err
}

// close stops the reaper goroutine. Children still running are no longer
// reaped by it.
func (r *reaper) close() {
	signal.Stop(r.sigs)
	close(r.stop)
	<-r.done
}
