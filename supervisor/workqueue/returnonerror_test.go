package workqueue_test

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/clock/fakeclock"
	"github.com/supervise-dev/supervise/supervisor/wait"
	"github.com/supervise-dev/supervise/supervisor/workqueue"
)

var t0 = time.Date(2020, 6, 30, 8, 14, 38, 0, time.UTC)

// simulate runs a controller that always fails: one worker under a 1 s wait.Until,
// the default rate limiter, and a reconcile that always fails. It returns
// the times of the first n failures. Everything runs on a fake clock inside a
// synctest bubble: the driver steps the clock to the next timer only once
// every goroutine is blocked, so the times are exact.
func simulate(t *testing.T, returnOnError bool, n int) []time.Time {
	var times []time.Time
	synctest.Test(t, func(t *testing.T) {
		clock := fakeclock.New(t0)
		q := workqueue.New(workqueue.Config[string]{
			Clock:       clock,
			RateLimiter: backoff.DefaultControllerRateLimiter[string](clock),
		})
		var mu sync.Mutex
		reconcile := func(string) error {
			mu.Lock()
			defer mu.Unlock()
			times = append(times, clock.Now())
			return errors.New("always fails")
		}
		processNext := func() bool {
			key, shutdown := q.Get()
			if shutdown {
				return false
			}
			defer q.Done(key)
			if err := reconcile(key); err != nil {
				q.AddRateLimited(key)
				return !returnOnError // the mistake measured here: returning on error
			}
			q.Forget(key)
			return true
		}
		stop := make(chan struct{})
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			wait.Loop{Clock: clock}.Until(func() {
				for processNext() {
				}
			}, time.Second, stop)
		}()
		q.Add("cluster")
		for {
			synctest.Wait()
			mu.Lock()
			got := len(times)
			mu.Unlock()
			if got >= n {
				break
			}
			at, ok := clock.NextWakeup()
			if !ok {
				t.Fatalf("stalled after %d failures: no timer pending", got)
			}
			clock.SetTime(at)
		}
		close(stop)
		q.ShutDown()
		<-exited
	})
	return times[:n]
}

// exp is the default limiter's exponential part after the i-th failure.
func exp(i int) time.Duration {
	return min(5*time.Millisecond<<(i-1), 1000*time.Second)
}

func checkIntervals(t *testing.T, times []time.Time, want func(i int) time.Duration) {
	t.Helper()
	for i := 1; i < len(times); i++ {
		got := times[i].Sub(times[i-1])
		t.Logf("failure %2d → %2d: %v", i, i+1, got)
		if w := want(i); got != w {
			t.Errorf("interval after failure %d = %v, want %v", i, got, w)
		}
	}
}

// TestWorkerReturnsOnError measures what a worker that returns on error
// gets: ~1 s retries for the first 8 failures (the wait.Until period hides
// the limiter), then 1.28, 2.56, 5.12 … s, capped at 1000 s.
func TestWorkerReturnsOnError(t *testing.T) {
	times := simulate(t, true, 22)
	checkIntervals(t, times, func(i int) time.Duration { return max(time.Second, exp(i)) })
	if got := times[9].Sub(times[8]); got != 1280*time.Millisecond {
		t.Errorf("9th interval = %v, want 1.28s", got)
	}
}

// TestWorkerKeepsGoing: a worker that does not return on error
// retries exactly on the limiter's curve, 5, 10, 20, 40 … ms. This is why
// the supervisor's workers never return on an error.
func TestWorkerKeepsGoing(t *testing.T) {
	times := simulate(t, false, 22)
	checkIntervals(t, times, exp)
	if got := times[1].Sub(times[0]); got != 5*time.Millisecond {
		t.Errorf("first retry after %v, want 5ms", got)
	}
}
