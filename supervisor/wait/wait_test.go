package wait

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// drive runs loop in a synctest bubble on a fake clock: whenever every
// goroutine is blocked it steps the clock to the next timer. f closes stop
// on its n-th start, so a loop that never blocks ends too. drive returns the
// offsets from t0 at which f started.
func drive(t *testing.T, n int, loop func(l Loop, f func(), stop <-chan struct{}), work time.Duration) []time.Duration {
	t.Helper()
	var starts []time.Duration
	synctest.Test(t, func(t *testing.T) {
		clock := fakeclock.New(t0)
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

// TestUntilTiming: the period counts from when f returns.
func TestUntilTiming(t *testing.T) {
	got := drive(t, 4, func(l Loop, f func(), stop <-chan struct{}) { l.Until(f, 10*time.Second, stop) }, 3*time.Second)
	if want := secs(0, 13, 26, 39); !equal(got, want) {
		t.Fatalf("f started at %v, want %v", got, want)
	}
}

// TestStopWinsOverTick: f closes stop and moves the clock past the period,
// so both are ready when the loop selects. Whichever select picks, f must
// not run again.
func TestStopWinsOverTick(t *testing.T) {
	{
		for range 200 {
			synctest.Test(t, func(t *testing.T) {
				clock := fakeclock.New(t0)
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
					loop.Until(f, time.Second, stop)
				}()
				synctest.Wait()
				clock.Step(time.Second)
				<-done
				if runs != 2 {
					t.Fatalf("f ran %d times, want 2", runs)
				}
			})
		}
	}
}

func TestStoppedBeforeStart(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	Loop{}.Until(func() { t.Fatal("f ran after stop") }, time.Second, stop)
}

// TestRealClockLoop runs on the real clock with a tiny period: f runs until
// it stops the loop.
func TestRealClockLoop(t *testing.T) {
	stop := make(chan struct{})
	n := 0
	Loop{}.Until(func() {
		n++
		if n == 3 {
			close(stop)
		}
	}, time.Microsecond, stop)
	if n != 3 {
		t.Fatalf("f ran %d times, want 3", n)
	}
}

func TestPanicIsRecoveredAndLoopGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := fakeclock.New(t0)
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
