package supervisor

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/notify"
	"github.com/supervise-dev/supervise/proc"
)

// shutdownAll stops every program, each once everything that depends on
// it is down, all within shutdown_timeout; what is left then is killed.
// It returns when every program is down.
func (s *Supervisor) shutdownAll() {
	s.mu.Lock()
	if s.shuttingDown {
		s.mu.Unlock()
		return
	}
	s.shuttingDown = true
	s.stopJobsLocked()
	timeout := s.cfg.Supervisor.ShutdownTimeout
	s.mu.Unlock()
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	s.log.Info("shutting down", "timeout", timeout)
	_ = notify.NotifySystemd("STOPPING=1")

	var timer sync.WaitGroup
	defer timer.Wait() // after cancel: deferred calls run last first
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	timer.Go(func() {
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				s.log.Warn("shutdown timeout reached; killing what is left")
				s.Kill()
			}
		case <-s.ctx.Done():
		}
	})
	s.stopInOrder()
}

// stopInOrder stops every instance as soon as everything that depends on
// it is down (a dependency waits for its dependents, nothing else waits),
// and returns when all are down, or when the supervisor's context ends.
//
// The stop signals of a wave go out from here in one loop, before the
// workers take the keys: a worker's stop of one instance (its state, its
// events, the grace's timer) took longer than the signal, and with the
// signals behind a queue of such stops the last program heard of the
// shutdown tens of milliseconds after the first. The workers then carry
// on each stop as usual (the grace, SIGKILL after it, the exit, post_stop)
// without signalling again (stopSignalled). A program whose stop must
// first run pre_stop, or goes through a sandbox init, is signalled by its
// worker, after its hook.
func (s *Supervisor) stopInOrder() {
	s.mu.Lock()
	// A reload is refused from now on, so the instances are these.
	dependents := map[string][]string{} // program → the programs that depend on it
	for _, p := range s.cfg.Programs {
		for _, d := range p.DependsOn {
			dependents[d] = append(dependents[d], p.Name)
		}
	}
	byProgram := map[string][]*instance{}
	var held []*instance // not released yet: something that depends on them may be up
	for _, k := range s.sortedKeysLocked() {
		in := s.instances[k]
		byProgram[in.spec.Name] = append(byProgram[in.spec.Name], in)
		held = append(held, in)
	}
	released := map[*instance]bool{}
	var pending []*instance // released, not down yet
	// down: released and stopped, its exit handled too (post_stop
	// included, which runs in the sandbox the shutdown deletes last).
	down := func(in *instance) bool { return released[in] && stoppedDone(in) }
	dependentsDown := func(in *instance) bool {
		for _, d := range dependents[in.spec.Name] {
			for _, other := range byProgram[d] {
				if !down(other) {
					return false
				}
			}
		}
		return true
	}
	s.mu.Unlock()

	type stopSignal struct {
		key, id string
		sig     syscall.Signal
	}
	for {
		var wave []string
		var signals []stopSignal
		s.mu.Lock()
		kept := held[:0]
		for _, in := range held {
			if !dependentsDown(in) {
				kept = append(kept, in)
				continue
			}
			released[in] = true
			in.goal = goalStop
			wave = append(wave, in.key)
			pending = append(pending, in)
			if id, sig, ok := s.claimStopSignalLocked(in); ok {
				signals = append(signals, stopSignal{in.key, id, sig})
			}
		}
		held = kept
		// Every state change wakes this check: it drops the instances
		// found down from the front and stops at the first one still
		// up, so a thousand programs cost a thousand checks, not a
		// million.
		for len(pending) > 0 && down(pending[0]) {
			pending = pending[1:]
		}
		finished := len(held) == 0 && len(pending) == 0
		changed := s.changed
		s.mu.Unlock()

		for _, st := range signals {
			if err := s.rt.Signal(st.id, st.sig); err != nil && !errors.Is(err, proc.ErrNotFound) && !errors.Is(err, proc.ErrProcessDone) && !errors.Is(err, proc.ErrInvalidState) {
				s.log.Warn("sending the stop signal", "program", st.key, "err", err)
			}
		}
		for _, k := range wave {
			s.queue.Add(k)
		}
		if finished {
			return
		}
		if len(wave) > 0 {
			continue // the wave may have brought others down already
		}
		select {
		case <-changed:
		case <-s.ctx.Done():
			return
		}
	}
}

// claimStopSignalLocked says whether the shutdown sends in's stop signal
// itself, and which, to which process: when in runs, no stop of it has
// begun, and its stop is the signal alone (no pre_stop to run first, no
// sandbox init to relay it). It records the claim, so the worker that
// carries on the stop does not signal again.
func (s *Supervisor) claimStopSignalLocked(in *instance) (id string, sig syscall.Signal, ok bool) {
	spec := in.spec
	if in.procID == "" || in.state != Running || in.stopSignalled == in.procID ||
		spec.Hooks.PreStop != nil || len(spec.Sandbox.Namespaces) > 0 {
		return "", 0, false
	}
	in.stopSignalled = in.procID
	sig = spec.StopSignal
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	return in.procID, sig, true
}
