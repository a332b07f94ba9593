package supervisor

import "context"

// While an upgrade in place has the supervisor frozen, the runtime is
// frozen too and holds its lock until the exec (or the thaw): a command
// that called into it then (status reading cgroup figures, signal) would
// block past the end of every command the exec waits for, and its client
// would lose the connection. So a command's runtime call either happens
// before Freeze returns (which waits for it) or waits for the thaw,
// watching its context, which the upgrade ends before the exec.

// runtimeCall runs f, a command's call into the runtime, waiting first
// while the supervisor is frozen; it returns ctx's cause, f not run, when
// ctx ends before the thaw.
func (s *Supervisor) runtimeCall(ctx context.Context, f func()) error {
	s.mu.Lock()
	for s.frozen {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		s.mu.Lock()
	}
	s.rtCalls++
	s.mu.Unlock()
	defer s.endRuntimeCall()
	f()
	return nil
}

// tryRuntimeCall runs f as runtimeCall does, unless the supervisor is
// frozen: then it returns false at once, f not run.
func (s *Supervisor) tryRuntimeCall(f func()) bool {
	s.mu.Lock()
	if s.frozen {
		s.mu.Unlock()
		return false
	}
	s.rtCalls++
	s.mu.Unlock()
	defer s.endRuntimeCall()
	f()
	return true
}

func (s *Supervisor) endRuntimeCall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rtCalls--
	if s.rtCalls == 0 {
		s.notifyChangedLocked() // Freeze may wait for it
	}
}
