package supervisor

import (
	"time"

	"github.com/supervise-dev/supervise/logs"
)

// awaitStartupOutput runs when an exit_on program's end is about to stop
// the set: each process started less than startupGrace ago that has
// printed nothing yet gets until its first line, or until startupGrace
// after its start, before the stop signals go out. Without it a fast
// one-shot kills a neighbour before the neighbour said anything.
func (s *Supervisor) awaitStartupOutput() {
	if s.startupGrace <= 0 {
		return
	}
	type waiter struct {
		found    chan struct{}
		cancel   func()
		deadline time.Time
	}
	var ws []waiter
	s.mu.Lock()
	now := s.clock.Now()
	for _, in := range s.instances {
		starting := in.procID == "" && in.state == Starting
		if in.procID == "" && !starting || in.logs == nil || in.logs.ring == nil {
			continue
		}
		since, deadline := in.startedAt, in.startedAt.Add(s.startupGrace)
		if starting || since.IsZero() {
			// Its run is beginning now; a line of the last moments
			// counts, though it may be an earlier run's.
			since, deadline = now.Add(-s.startupGrace), now.Add(s.startupGrace)
		}
		if !deadline.After(now) {
			continue
		}
		found := make(chan struct{})
		cancel := in.logs.ring.Watch(since, logs.LineTestFunc(func(string) bool { return true }), func() { close(found) })
		ws = append(ws, waiter{found, cancel, deadline})
	}
	s.mu.Unlock()
	for _, w := range ws {
		t := s.clock.NewTimer(w.deadline.Sub(s.clock.Now()))
		select {
		case <-w.found:
		case <-t.C():
		case <-s.ctx.Done(): // Kill: no more waiting
		}
		t.Stop()
		w.cancel()
	}
}
