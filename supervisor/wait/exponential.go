package wait

import (
	"sync"
	"time"

	"github.com/supervise-dev/supervise/backoff"
)

// Exponential is a Backoff for BackoffUntil: Initial, then × Factor (default
// 2) each time up to Max. When more than ResetAfter has passed on Clock since
// the previous Next, it starts over at Initial (ResetAfter 0: never). It is
// safe for concurrent use.
type Exponential struct {
	Initial    time.Duration
	Max        time.Duration
	Factor     float64
	ResetAfter time.Duration
	Clock      backoff.Clock // nil: the real clock

	mu   sync.Mutex
	cur  time.Duration // guarded by mu; 0 before the first Next
	last time.Time     // guarded by mu
}

func (e *Exponential) Next() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	clock := e.Clock
	if clock == nil {
		clock = backoff.RealClock{}
	}
	now := clock.Now()
	factor := e.Factor
	if factor <= 0 {
		factor = 2
	}
	switch {
	case e.cur == 0 || (e.ResetAfter > 0 && now.Sub(e.last) > e.ResetAfter):
		e.cur = e.Initial
	default:
		e.cur = time.Duration(float64(e.cur) * factor)
	}
	if e.Max > 0 && (e.cur > e.Max || e.cur < 0) {
		e.cur = e.Max
	}
	e.last = now
	return e.cur
}
