// Package clock is the source of time of everything that decides or waits
// out a delay: the real clock in production, a fake one (package fakeclock)
// in tests, so that backoff, queue and probe logic never sleep in a test.
package clock

import "time"

// Clock is the source of time for everything that decides or waits out a
// delay. Production code uses Real{}; tests use a *fakeclock.Clock.
type Clock interface {
	Now() time.Time
	Since(t time.Time) time.Duration
	// NewTimer returns a timer that sends the current time on its channel
	// once d has passed.
	NewTimer(d time.Duration) Timer
	// After is NewTimer(d).C(), for waits that are never cancelled.
	After(d time.Duration) <-chan time.Time
	// AfterFunc calls f in its own goroutine once d has passed. The returned
	// timer's C is nil.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the part of *time.Timer a Clock hands out. Stop and Reset follow
// Go 1.23+ semantics: once they return, C delivers nothing from the old
// setting.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether the timer was
	// still pending.
	Stop() bool
	// Reset changes the timer to fire d from now; it reports whether the
	// timer was still pending.
	Reset(d time.Duration) bool
}

// Real is the wall clock (with Go's monotonic reading).
type Real struct{}

func (Real) Now() time.Time                         { return time.Now() }
func (Real) Since(t time.Time) time.Duration        { return time.Since(t) }
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (Real) NewTimer(d time.Duration) Timer         { return realTimer{time.NewTimer(d)} }
func (Real) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }
