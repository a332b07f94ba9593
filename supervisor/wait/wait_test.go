package wait

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/supervise-dev/supervise/backoff"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// drive runs loop in a synctest bubble on a FakeClock: whenever every
// goroutine is blocked it steps the clock to the next timer. f closes stop
// on its n-th start, so a loop that never blocks ends too. drive returns the
// offsets from t0 at which f started.
func drive(t *testing.T, n int, loop func(l Loop, f func(), stop <-chan struct{}), work time.Duration) []time.Duration {
	t.Helper()
	var starts []time.Duration
	synctest.Test(t, func(t *testing.T) {
		clock := backoff.NewFakeClock(t0)
		stop := make(chan struct{})
		f := func() {
			starts = append(starts, clock.Since(t0))
			if len(starts) == n {
				close(stop)
			}
			clock.Step(work) // f takes this long
		}
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			loop(Loop{Clock: clock}, f, stop)
		}()
		for {
			synctest.Wait()
			select {
			case <-exited:
				return
			default:
			}
			at, ok := clock.NextWakeup()
			if !ok {
				t.Fatalf("loop stalled after %d runs", len(starts))
			}
			clock.SetTime(at)
		}
	})
	return starts
}

func secs(ds ...float64) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = time.Duration(d * float64(time.Second))
	}
	return out
}

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLoopsTiming(t *testing.T) {
	tests := []struct {
		name string
		loop func(l Loop, f func(), stop <-chan struct{})
		work time.Duration
		want []time.Duration
	}{
		{"Until counts the period from when f returns",
			func(l Loop, f func(), stop <-chan struct{}) { l.Until(f, 10*time.Second, stop) },
			3 * time.Second, secs(0, 13, 26, 39)},
		{"NonSlidingUntil counts it from when f starts",
			func(l Loop, f func(), stop <-chan struct{}) { l.NonSlidingUntil(f, 10*time.Second, stop) },
			3 * time.Second, secs(0, 10, 20, 30)},
		{"NonSlidingUntil runs at once when f overran",
			func(l Loop, f func(), stop <-chan struct{}) { l.NonSlidingUntil(f, 2*time.Second, stop) },
			3 * time.Second, secs(0, 3, 6, 9)},
		{"JitterUntil adds factor × rand × period",
			func(l Loop, f func(), stop <-chan struct{}) {
				l.Rand = func() float64 { return 0.5 }
				l.JitterUntil(f, 10*time.Second, 0.2, true, stop)
			},
			0, secs(0, 11, 22, 33)},
		{"BackoffUntil takes each wait from the Backoff",
			func(l Loop, f func(), stop <-chan struct{}) {
				l.BackoffUntil(f, &Exponential{Initial: time.Second, Max: 8 * time.Second, Clock: l.Clock}, true, stop)
			},
			0, secs(0, 1, 3, 7, 15, 23, 31)},
		{"UntilWithContext",
			func(l Loop, f func(), stop <-chan struct{}) {
				ctx, cancel := context.WithCancel(context.Background())
				go func() { <-stop; cancel() }()
				l.UntilWithContext(ctx, func(context.Context) { f() }, 5*time.Second)
			},
			time.Second, secs(0, 6, 12)},
		{"NonSlidingUntilWithContext",
			func(l Loop, f func(), stop <-chan struct{}) {
				ctx, cancel := context.WithCancel(context.Background())
				go func() { <-stop; cancel() }()
				l.NonSlidingUntilWithContext(ctx, func(context.Context) { f() }, 5*time.Second)
			},
			time.Second, secs(0, 5, 10)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := drive(t, len(tc.want), tc.loop, tc.work)
			if !equal(got, tc.want) {
				t.Fatalf("f started at %v, want %v", got, tc.want)
			}
		})
	}
}

// TestStopWinsOverTick: f closes stop and moves the clock past the period,
// so both are ready when the loop selects. Whichever select picks, f must
// not run again.
func TestStopWinsOverTick(t *testing.T) {
	for _, sliding := range []bool{true, false} {
		for range 200 {
			synctest.Test(t, func(t *testing.T) {
				clock := backoff.NewFakeClock(t0)
				stop := make(chan struct{})
				runs := 0
				f := func() {
					runs++
					if runs == 2 {
						close(stop)
						clock.Step(time.Second) // the tick is due as well
					}
				}
				loop := Loop{Clock: clock}
				done := make(chan struct{})
				go func() {
					defer close(done)
					loop.JitterUntil(f, time.Second, 0, sliding, stop)
				}()
				synctest.Wait()
				clock.Step(time.Second)
				<-done
				if runs != 2 {
					t.Fatalf("sliding=%v: f ran %d times, want 2", sliding, runs)
				}
			})
		}
	}
}

func TestStoppedBeforeStart(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	Until(func() { t.Fatal("f ran after stop") }, time.Second, stop)
	NonSlidingUntil(func() { t.Fatal("f ran after stop") }, time.Second, stop)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	UntilWithContext(ctx, func(context.Context) { t.Fatal("f ran after cancel") }, 0)
	JitterUntilWithContext(ctx, func(context.Context) { t.Fatal("f ran after cancel") }, 0, 1, false)
	BackoffUntilWithContext(ctx, func(context.Context) { t.Fatal("f ran after cancel") }, &Exponential{}, true)
}

// TestRealClockLoop runs the package-level functions on the real clock with a
// zero period: f runs until it cancels.
func TestRealClockLoop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	UntilWithContext(ctx, func(context.Context) {
		n++
		if n == 3 {
			cancel()
		}
	}, 0)
	if n != 3 {
		t.Fatalf("f ran %d times, want 3", n)
	}
	stop := make(chan struct{})
	n = 0
	JitterUntil(func() {
		n++
		if n == 3 {
			close(stop)
		}
	}, time.Microsecond, 1, false, stop)
	if n != 3 {
		t.Fatalf("JitterUntil: f ran %d times, want 3", n)
	}
}

func TestPanicIsRecoveredAndLoopGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := backoff.NewFakeClock(t0)
		var logs bytes.Buffer
		var panics []any
		stop := make(chan struct{})
		runs := 0
		loop := Loop{
			Clock:   clock,
			Logger:  slog.New(slog.NewTextHandler(&logs, nil)),
			OnPanic: func(v any) { panics = append(panics, v) },
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			loop.Until(func() {
				runs++
				switch runs {
				case 1:
					panic("reconcile bug")
				case 2:
					close(stop)
				}
			}, time.Second, stop)
		}()
		synctest.Wait()
		if runs != 1 || len(panics) != 1 || panics[0] != "reconcile bug" {
			t.Fatalf("after the panic: runs=%d panics=%v", runs, panics)
		}
		clock.Step(time.Second)
		<-done
		if runs != 2 {
			t.Fatalf("loop did not go on after the panic: %d runs", runs)
		}
		out := logs.String()
		if !strings.Contains(out, "reconcile bug") || !strings.Contains(out, "wait_test.go") {
			t.Fatalf("panic not logged with its stack:\n%s", out)
		}
	})
}

func TestExponentialReset(t *testing.T) {
	clock := backoff.NewFakeClock(t0)
	e := &Exponential{Initial: time.Second, Max: 10 * time.Second, Factor: 3, ResetAfter: time.Minute, Clock: clock}
	var got []time.Duration
	for range 4 {
		got = append(got, e.Next())
	}
	clock.Step(time.Minute + 1)
	got = append(got, e.Next())
	if want := secs(1, 3, 9, 10, 1); !equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestJitter(t *testing.T) {
	l := Loop{Rand: func() float64 { return 0.25 }}
	if got := l.Jitter(time.Second, 0); got != 1250*time.Millisecond {
		t.Fatalf("Jitter(1s, 0) = %v, want 1.25s (factor 0 means 1)", got)
	}
	if got := l.Jitter(time.Second, 2); got != 1500*time.Millisecond {
		t.Fatalf("Jitter(1s, 2) = %v, want 1.5s", got)
	}
	if got := l.Jittered(time.Second, 0).Next(); got != time.Second {
		t.Fatalf("Jittered with factor 0 = %v", got)
	}
	var zero Loop
	for range 100 {
		if d := zero.Jitter(time.Second, 0.1); d < time.Second || d >= 1100*time.Millisecond {
			t.Fatalf("default jitter out of range: %v", d)
		}
	}
}
