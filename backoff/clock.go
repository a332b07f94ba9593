package backoff

import "time"

// Clock is the source of time for everything that decides or waits out a
// delay. Production code uses RealClock{}; tests use a *FakeClock.
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

// RealClock is the wall clock (with Go's monotonic reading).
type RealClock struct{}

func (RealClock) Now() time.Time                         { return time.Now() }
func (RealClock) Since(t time.Time) time.Duration        { return time.Since(t) }
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (RealClock) NewTimer(d time.Duration) Timer         { return realTimer{time.NewTimer(d)} }
func (RealClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }
