package supervisor

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/hooks"
	"github.com/supervise-dev/supervise/proc"
)

// Stopping an instance: pre_stop, the stop signal, the grace period, SIGKILL.

// reconcileStop drives in down to final; done is false while its process
// is still stopping.
func (s *Supervisor) reconcileStop(ctx context.Context, in *instance, final State) (done bool, err error) {
	if s.advanceStop(ctx, in) {
		return false, nil // the exit, or the end of the grace period, brings the key back
	}
	s.mu.Lock()
	if in.state != final && (in.state != Completed && in.state != Failed || in.goal == goalRemove) {
		in.nextStart = time.Time{}
		s.setStateLocked(in, final, "")
	}
	s.checkDoneLocked()
	s.mu.Unlock()
	return true, s.releaseSandbox(ctx, in, false)
}

// advanceStop drives a stop without holding a worker for the grace period:
// the first call runs pre_stop and sends the stop signal, then the key comes
// back when the process exits (an exit event) or when the grace period ends
// (AddAfter), and then SIGKILL goes to the sandbox. pre_stop's time comes out
// of stop_timeout, as in the kubelet. It reports whether a process is still
// there to wait for.
func (s *Supervisor) advanceStop(ctx context.Context, in *instance) bool {
	id, sid, last, health := in.procID, in.sandboxID, in.lastExit, in.health
	deadline := in.run.stopDeadline
	if id == "" {
		return false
	}
	s.mu.Lock()
	spec, streams := in.spec, in.logs
	grace := stopGraceLocked(spec, health) // a watchdog sets its kill reason under the lock
	s.mu.Unlock()
	if deadline.IsZero() { // the stop begins
		deadline = s.clock.Now().Add(grace)
		in.run.stopDeadline = deadline
		// Nothing asks a stopping program about its health: a probe
		// would only disturb its shutdown, and no verdict matters now.
		// Done before it shows Stopping, which the stop's waiters see.
		health.stopWatching()
		s.mu.Lock()
		s.setStateLocked(in, Stopping, "")
		s.mu.Unlock()
		if h := spec.Hooks.PreStop; h != nil && sid != "" {
			hs := *h
			if hs.Timeout <= 0 || hs.Timeout > grace {
				hs.Timeout = grace
			}
			if err := s.runHook(ctx, in, spec, streams, hooks.PreStop, &hs, programEnv(spec, in, last)); err != nil {
				s.log.Warn("pre_stop hook failed; stopping anyway", "program", in.key, "err", err)
			}
			// pre_stop's time came out of the grace, but the stop signal
			// always gets min_stop_grace: a program's TERM handler runs
			// however long the hook took, as the kubelet allows.
			if floor := s.clock.Now().Add(spec.MinStopGrace); deadline.Before(floor) {
				deadline = floor
				in.run.stopDeadline = deadline
			}
		}
		sig := spec.StopSignal
		if sig == 0 {
			sig = syscall.SIGTERM
		}
		s.mu.Lock()
		sent := in.stopSignalled == id // by the shutdown, which signals all at once
		in.stopSignalled = id
		s.mu.Unlock()
		if !sent {
			if err := s.rt.Signal(id, sig); err != nil && !errors.Is(err, proc.ErrNotFound) && !errors.Is(err, proc.ErrProcessDone) {
				s.log.Warn("sending the stop signal", "program", in.key, "err", err)
			}
		}
	}
	if remaining := deadline.Sub(s.clock.Now()); remaining > 0 {
		s.queue.AddAfter(in.key, remaining)
		return true
	}
	// Grace is over: SIGKILL to everything in the sandbox. The exit comes
	// back as any other, as proc's exit event, which brings the key back
	// to handleExit.
	if st, err := s.rt.Status(id); err == nil && st.State == proc.StateExited {
		return true // killed before: its exit event is on its way
	}
	s.log.Warn("stop timeout reached; killing", "program", in.key, "stop_timeout", spec.StopTimeout)
	s.mu.Lock()
	s.forcedLocked(in.key)
	s.mu.Unlock()
	if err := s.rt.Stop(ctx, id, 0); err != nil && !errors.Is(err, proc.ErrNotFound) {
		s.log.Warn("killing", "program", in.key, "err", err)
	}
	return true
}

// stopGraceLocked is how long a stop of a run may take before SIGKILL,
// pre_stop included: stop_timeout, or the grace period of the probe whose
// failure caused the stop.
func stopGraceLocked(spec *config.Program, h *health) time.Duration {
	grace := spec.StopTimeout
	if h != nil {
		var p *config.Probe
		switch h.killReason {
		case ReasonLivenessProbeFailed:
			p = spec.Probes.Liveness
		case ReasonStartupProbeFailed:
			p = spec.Probes.Startup
		}
		if p != nil && p.TerminationGracePeriod > 0 {
			grace = p.TerminationGracePeriod
		}
	}
	if grace <= 0 {
		grace = config.DefaultStopTimeout
	}
	return grace
}
