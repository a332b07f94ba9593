package proc

import (
	"errors"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/supervise-dev/supervise/internal/reap"
)

// exitFunc receives a child's wait status. It runs on the reaper goroutine
// with the registry locked, so it must not block nor call back into the
// reaper. Stops (of a ptraced child) are reported too; the entry stays
// registered until the child exited or was killed.
type exitFunc func(ws unix.WaitStatus)

// sweepEvery bounds how often a burst of SIGCHLDs walks every child.
// wait4 on "any child" walks the whole child list each call, so with
// thousands of programs a walk per signal made each start and each exit
// cost the fleet's size. A lone signal after a quiet spell is swept at
// once (a crash's restart is not delayed); within a burst the next walk
// comes at most this long after the previous one and collects every exit
// of the burst so far.
const sweepEvery = 5 * time.Millisecond

// sweepAfterStop is how soon after a signal that a traced child's stop
// explains the walk comes: what else the signal may stand for (an exit at
// the same moment) waits that long. A cold start on a cgroup v1 host is
// one such signal per program.
const sweepAfterStop = 50 * time.Millisecond

// reaper is the one owner of wait4 in its process. Every child is forked
// through spawn, which holds the registry lock across the fork and the
// registration, and the reaper holds the same lock while it reaps: an exit
// can never be collected before its pid is known, and a pid that is still
// registered has not been reaped, so it cannot have been reused. Unknown
// pids are orphans re-parented to us (we are PID 1 or a subreaper) and are
// reaped silently. Nothing else in the process may wait for children
// (no exec.Cmd.Wait, no os.Process.Wait): it would steal exits.
type reaper struct {
	sigs  chan os.Signal
	stop  chan struct{}
	done  chan struct{}
	sweep *time.Timer // the deferred walk of a burst

	mu      sync.Mutex
	waiting map[int]exitFunc // guarded by mu
	traced  map[int]bool     // children whose ptrace stop is awaited (spawnTraced); guarded by mu
	last    time.Time        // the last walk; guarded by mu
	armed   bool             // sweep is set; guarded by mu
	due     time.Time        // when sweep fires, if armed; guarded by mu
	orphans atomic.Int64     // orphans reaped so far
	walks   atomic.Int64     // walks of every child so far
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
		sweep:   time.NewTimer(time.Hour),
		waiting: waiting,
		traced:  make(map[int]bool),
	}
	r.sweep.Stop()
	signal.Notify(r.sigs, unix.SIGCHLD)
	go r.run()
	return r
}

func (r *reaper) run() {
	defer close(r.done)
	r.reapAll(true) // children that exited before Notify took effect
	for {
		select {
		case <-r.sigs:
			r.reapAll(false)
		case <-r.sweep.C:
			r.reapAll(true)
		case <-r.stop:
			r.sweep.Stop()
			return
		}
	}
}

// reapAll collects what a SIGCHLD may stand for (SIGCHLD coalesces, so
// one signal may stand for many changes). The stop of a child being
// started under ptrace is waited for by its pid, which costs nothing per
// other child; exits and orphans need the walk, which a burst shares
// (sweepEvery). now forces the walk (the deferred one, the first one).
func (r *reaper) reapAll(now bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	explained := false
	for pid := range r.traced {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG|unix.WALL, nil)
		for errors.Is(err, unix.EINTR) {
			got, err = unix.Wait4(pid, &ws, unix.WNOHANG|unix.WALL, nil)
		}
		if err == nil && got == pid {
			r.dispatchLocked(pid, ws)
			explained = true
		}
	}
	if now {
		r.armed = false
	}
	since := time.Since(r.last)
	switch {
	case now:
	case explained:
		r.deferWalkLocked(max(sweepAfterStop-since, 0))
		return
	case since < sweepEvery:
		r.deferWalkLocked(sweepEvery - since)
		return
	}
	r.last = time.Now()
	r.walks.Add(1)
	reap.Changed(r.dispatchLocked)
}

// deferWalkLocked makes sure a walk comes within d: a walk armed for
// later comes forward (an exit right after a traced stop deferred the
// walk by sweepAfterStop must not wait that long: a program that crashes
// at once would be restarted 50 ms late), one armed sooner stays.
func (r *reaper) deferWalkLocked(d time.Duration) {
	at := time.Now().Add(d)
	if !r.armed || at.Before(r.due) {
		r.armed = true
		r.due = at
		r.sweep.Reset(d)
	}
}

// dispatchLocked hands ws to pid's exitFunc, or counts an orphan.
func (r *reaper) dispatchLocked(pid int, ws unix.WaitStatus) {
	f, ok := r.waiting[pid]
	if !ok {
		switch {
		case reap.Ended(ws):
			r.orphans.Add(1)
		case ws.Stopped():
			// Only a tracee reports a stop here (no WUNTRACED), and only
			// our starts are traced: this one's spawner died before it
			// told us the pid. It has not run the program: end it.
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		return
	}
	if reap.Ended(ws) {
		delete(r.waiting, pid)
		delete(r.traced, pid)
	}
	f(ws)
}

// spawn forks with the registry locked and registers the child's pid with
// onExit before anyone can reap it.
func (r *reaper) spawn(fork func() (int, error), onExit exitFunc) (int, error) {
	return r.spawnOpt(fork, onExit, false)
}

// spawnTraced is spawn for a child that stops under ptrace after its
// exec: its stop is waited for by pid on every SIGCHLD until untrace.
func (r *reaper) spawnTraced(fork func() (int, error), onExit exitFunc) (int, error) {
	return r.spawnOpt(fork, onExit, true)
}

func (r *reaper) spawnOpt(fork func() (int, error), onExit exitFunc, traced bool) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := fork()
	if err != nil {
		return 0, err
	}
	r.waiting[pid] = onExit
	if traced {
		r.traced[pid] = true
	}
	return pid, nil
}

// untrace ends the wait for pid's ptrace stop (it was detached).
func (r *reaper) untrace(pid int) {
	r.mu.Lock()
	delete(r.traced, pid)
	r.mu.Unlock()
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
