// Package fakeclock is a clock for tests: it moves only when told to.
package fakeclock

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/supervise-dev/supervise/clock"
)

// Clock is a clock.Clock that moves only when told to (Step, SetTime). Timers
// whose deadline is reached fire synchronously inside Step or SetTime, in
// deadline order, so a test that steps the clock and then waits on what the
// timer's owner does next needs no sleeping. Waiters and WaitForWaiters tell a
// test when a goroutine has armed a timer, so it can step only then.
//
// Only tests import it; it is a package of its own because the tests of
// several packages drive the same clock.
type Clock struct {
	mu      sync.Mutex
	now     time.Time     // guarded by mu
	waiters []*fakeTimer  // guarded by mu; pending timers
	seq     uint64        // guarded by mu; creation order, to fire ties stably
	armed   chan struct{} // guarded by mu; closed and replaced when a timer is armed
}

// New returns a Clock reading t0.
func New(t0 time.Time) *Clock {
	return &Clock{now: t0, armed: make(chan struct{})}
}

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	t := &fakeTimer{clock: c, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

func (c *Clock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &fakeTimer{clock: c, f: f}
	t.Reset(d)
	return t
}

// Step moves the clock forward by d and fires every timer that is due.
func (c *Clock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(c.now.Add(d))
}

// SetTime sets the clock to t and fires every timer that is due. Going
// backwards is allowed and fires nothing.
func (c *Clock) SetTime(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(t)
}

func (c *Clock) setLocked(t time.Time) {
	c.now = t
	var due []*fakeTimer
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.deadline.After(t) {
			due = append(due, w)
		} else {
			kept = append(kept, w)
		}
	}
	clear(c.waiters[len(kept):])
	c.waiters = kept
	slices.SortFunc(due, func(a, b *fakeTimer) int {
		if n := a.deadline.Compare(b.deadline); n != 0 {
			return n
		}
		return cmp.Compare(a.seq, b.seq)
	})
	for _, w := range due {
		w.fireLocked(t)
	}
}

// HasWaiters reports whether any timer is pending.
func (c *Clock) HasWaiters() bool { return c.Waiters() > 0 }

// Waiters returns the number of pending timers.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// NextWakeup returns the earliest deadline of the pending timers; ok is false
// when none is pending.
func (c *Clock) NextWakeup() (at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.waiters {
		if !ok || w.deadline.Before(at) {
			at, ok = w.deadline, true
		}
	}
	return at, ok
}

// WaitForWaiters blocks until at least n timers are pending or ctx ends.
func (c *Clock) WaitForWaiters(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		have, armed := len(c.waiters), c.armed
		c.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-armed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

type fakeTimer struct {
	clock    *Clock
	c        chan time.Time // nil for AfterFunc; capacity 1
	f        func()         // AfterFunc's callback
	deadline time.Time      // guarded by clock.mu
	seq      uint64         // guarded by clock.mu
	pending  bool           // guarded by clock.mu
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	return t.stopLocked()
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	was := t.stopLocked()
	t.deadline = c.now.Add(d)
	if d <= 0 {
		t.fireLocked(c.now)
		return was
	}
	c.seq++
	t.seq = c.seq
	t.pending = true
	c.waiters = append(c.waiters, t)
	close(c.armed)
	c.armed = make(chan struct{})
	return was
}

// stopLocked disarms t and drops an undelivered tick, so nothing from the
// old setting arrives after Stop or Reset returns (Go 1.23 timer semantics).
func (t *fakeTimer) stopLocked() bool {
	if t.c != nil {
		select {
		case <-t.c:
		default:
		}
	}
	if !t.pending {
		return false
	}
	t.pending = false
	ws := t.clock.waiters
	if i := slices.Index(ws, t); i >= 0 {
		t.clock.waiters = slices.Delete(ws, i, i+1)
	}
	return true
}

func (t *fakeTimer) fireLocked(now time.Time) {
	t.pending = false
	if t.f != nil {
		go t.f()
		return
	}
	select {
	case t.c <- now: // capacity 1 and drained on every re-arm: never blocks
	default:
	}
}

// HasWaiterAt reports whether a pending timer fires exactly at t, so a test
// can step the clock only once the code under test has armed its timer.
func (c *Clock) HasWaiterAt(t time.Time) bool { return c.waitersAt(t) > 0 }

func (c *Clock) waitersAt(t time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, w := range c.waiters {
		if w.deadline.Equal(t) {
			n++
		}
	}
	return n
}

// WaitForWaiterAt blocks until a pending timer fires exactly at t, or ctx
// ends: a test steps the clock only once the code under test has armed its
// timer, without polling.
func (c *Clock) WaitForWaiterAt(ctx context.Context, t time.Time) error {
	return c.WaitForWaitersAt(ctx, t, 1)
}

// WaitForWaitersAt blocks until at least n pending timers fire exactly at t,
// or ctx ends: for code that arms several timers from several goroutines.
func (c *Clock) WaitForWaitersAt(ctx context.Context, t time.Time, n int) error {
	for {
		c.mu.Lock()
		armed := c.armed
		c.mu.Unlock()
		if c.waitersAt(t) >= n {
			return nil
		}
		select {
		case <-armed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
