// Package wait runs a function periodically until told to stop: the
// controller's workers, backoff GC and other housekeeping loops.
//
//   - Until runs f, waits period after f returns, and repeats (sliding);
//     NonSlidingUntil counts the period from when f started; JitterUntil adds
//     up to jitterFactor × period to each wait; BackoffUntil takes each wait
//     from a Backoff; Forever never stops.
//   - The stop channel (or ctx) is checked before every run, so a stop and a
//     tick that arrive together never cause one more run.
//   - A panic in f is recovered, logged with its stack (and passed to
//     Loop.OnPanic), and the loop goes on after the usual wait: one bad
//     reconcile must not take the supervisor, maybe PID 1, down with it.
//   - Time comes from a clock.Clock: the package-level functions use the
//     real clock and slog.Default(); a Loop value chooses its own clock,
//     logger, jitter source and panic hook.
//
// Each call blocks its caller until stopped; run it in a goroutine the caller
// owns and waits for.
package wait

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"github.com/supervise-dev/supervise/clock"
)

// Backoff hands out the successive waits of BackoffUntil.
type Backoff interface {
	Next() time.Duration
}

// Loop holds what the loops take from their environment. The zero value uses
// the real clock, slog.Default(), math/rand/v2 for jitter, and no panic hook.
type Loop struct {
	Clock   clock.Clock
	Logger  *slog.Logger
	Rand    func() float64 // jitter source in [0, 1)
	OnPanic func(v any)    // called after a recovered panic is logged
}

// Until runs f every period until stop is closed; the period starts when f
// returns.
func Until(f func(), period time.Duration, stop <-chan struct{}) { Loop{}.Until(f, period, stop) }

// NonSlidingUntil runs f every period until stop is closed; the period
// starts when f starts.
func NonSlidingUntil(f func(), period time.Duration, stop <-chan struct{}) {
	Loop{}.NonSlidingUntil(f, period, stop)
}

// JitterUntil runs f every period plus up to jitterFactor × period (no jitter
// when jitterFactor ≤ 0) until stop is closed. sliding counts the wait from
// when f returns, else from when it starts.
func JitterUntil(f func(), period time.Duration, jitterFactor float64, sliding bool, stop <-chan struct{}) {
	Loop{}.JitterUntil(f, period, jitterFactor, sliding, stop)
}

// BackoffUntil runs f, waiting b.Next() between runs, until stop is closed.
func BackoffUntil(f func(), b Backoff, sliding bool, stop <-chan struct{}) {
	Loop{}.BackoffUntil(f, b, sliding, stop)
}

// Forever runs f every period, for ever.
func Forever(f func(), period time.Duration) { Loop{}.Until(f, period, nil) }

// UntilWithContext is Until, stopping when ctx is done; f gets ctx.
func UntilWithContext(ctx context.Context, f func(context.Context), period time.Duration) {
	Loop{}.UntilWithContext(ctx, f, period)
}

// NonSlidingUntilWithContext is NonSlidingUntil, stopping when ctx is done.
func NonSlidingUntilWithContext(ctx context.Context, f func(context.Context), period time.Duration) {
	Loop{}.NonSlidingUntilWithContext(ctx, f, period)
}

// JitterUntilWithContext is JitterUntil, stopping when ctx is done.
func JitterUntilWithContext(ctx context.Context, f func(context.Context), period time.Duration, jitterFactor float64, sliding bool) {
	Loop{}.JitterUntilWithContext(ctx, f, period, jitterFactor, sliding)
}

// BackoffUntilWithContext is BackoffUntil, stopping when ctx is done.
func BackoffUntilWithContext(ctx context.Context, f func(context.Context), b Backoff, sliding bool) {
	Loop{}.BackoffUntilWithContext(ctx, f, b, sliding)
}

func (l Loop) Until(f func(), period time.Duration, stop <-chan struct{}) {
	l.JitterUntil(f, period, 0, true, stop)
}

func (l Loop) NonSlidingUntil(f func(), period time.Duration, stop <-chan struct{}) {
	l.JitterUntil(f, period, 0, false, stop)
}

func (l Loop) JitterUntil(f func(), period time.Duration, jitterFactor float64, sliding bool, stop <-chan struct{}) {
	l.BackoffUntil(f, l.Jittered(period, jitterFactor), sliding, stop)
}

func (l Loop) Forever(f func(), period time.Duration) { l.Until(f, period, nil) }

func (l Loop) UntilWithContext(ctx context.Context, f func(context.Context), period time.Duration) {
	l.JitterUntilWithContext(ctx, f, period, 0, true)
}

func (l Loop) NonSlidingUntilWithContext(ctx context.Context, f func(context.Context), period time.Duration) {
	l.JitterUntilWithContext(ctx, f, period, 0, false)
}

func (l Loop) JitterUntilWithContext(ctx context.Context, f func(context.Context), period time.Duration, jitterFactor float64, sliding bool) {
	l.BackoffUntil(func() { f(ctx) }, l.Jittered(period, jitterFactor), sliding, ctx.Done())
}

func (l Loop) BackoffUntilWithContext(ctx context.Context, f func(context.Context), b Backoff, sliding bool) {
	l.BackoffUntil(func() { f(ctx) }, b, sliding, ctx.Done())
}

// BackoffUntil is the loop all the others are made of. A nil stop never
// closes.
func (l Loop) BackoffUntil(f func(), b Backoff, sliding bool, stop <-chan struct{}) {
	clk := l.clock()
	var t clock.Timer
	arm := func() {
		d := b.Next()
		if t == nil {
			t = clk.NewTimer(d)
		} else {
			t.Reset(d)
		}
	}
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		// Checked first on every round: select picks at random among ready
		// cases, so a tick that arrived together with stop must not win.
		select {
		case <-stop:
			return
		default:
		}
		if !sliding {
			arm()
		}
		l.run(f)
		if sliding {
			arm()
		}
		select {
		case <-stop:
			return
		case <-t.C():
		}
	}
}

// run calls f, recovering and reporting a panic.
func (l Loop) run(f func()) {
	defer func() {
		if v := recover(); v != nil {
			log := l.Logger
			if log == nil {
				log = slog.Default()
			}
			log.Error("recovered from panic in loop; continuing",
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if l.OnPanic != nil {
				l.OnPanic(v)
			}
		}
	}()
	f()
}

func (l Loop) clock() clock.Clock {
	if l.Clock == nil {
		return clock.Real{}
	}
	return l.Clock
}

func (l Loop) rand() float64 {
	if l.Rand == nil {
		return rand.Float64()
	}
	return l.Rand()
}

// Jitter returns d plus a random part of up to maxFactor × d (maxFactor ≤ 0
// means 1), taken from l.Rand.
func (l Loop) Jitter(d time.Duration, maxFactor float64) time.Duration {
	if maxFactor <= 0 {
		maxFactor = 1
	}
	return d + time.Duration(l.rand()*maxFactor*float64(d))
}

// Jittered returns a Backoff of period plus up to factor × period each time;
// factor ≤ 0 gives the plain period.
func (l Loop) Jittered(period time.Duration, factor float64) Backoff {
	return jittered{l: l, period: period, factor: factor}
}

type jittered struct {
	l      Loop
	period time.Duration
	factor float64
}

func (j jittered) Next() time.Duration {
	if j.factor <= 0 {
		return j.period
	}
	return j.l.Jitter(j.period, j.factor)
}
