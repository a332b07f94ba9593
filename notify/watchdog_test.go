package notify

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// Watchdog tests run in a synctest bubble: after a clock step,
// synctest.Wait lets a fired callback finish before the test looks.
func watchdogEnv(t *testing.T, timeout time.Duration) (*fakeclock.Clock, *Watchdog, *atomic.Int32, func(time.Duration)) {
	c := fakeclock.New(t0)
	var fired atomic.Int32
	w := NewWatchdog(c, timeout, nil, func() { fired.Add(1) })
	t.Cleanup(w.Stop)
	stepTo := func(at time.Duration) {
		c.SetTime(t0.Add(at))
		synctest.Wait()
	}
	return c, w, &fired, stepTo
}

func TestWatchdogFiresOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, w, fired, stepTo := watchdogEnv(t, 30*time.Second)
		if !c.HasWaiterAt(t0.Add(30 * time.Second)) {
			t.Fatal("not armed at t0+30s")
		}
		stepTo(30*time.Second - time.Nanosecond)
		if n := fired.Load(); n != 0 {
			t.Fatalf("fired %d times before the timeout", n)
		}
		stepTo(30 * time.Second)
		if n := fired.Load(); n != 1 {
			t.Fatalf("fired %d times at the timeout, want 1", n)
		}
		w.Kick() // too late: nothing re-arms
		stepTo(time.Hour)
		if n := fired.Load(); n != 1 || c.Waiters() != 0 {
			t.Fatalf("fired %d times, %d timers armed; want 1 and none", n, c.Waiters())
		}
	})
}

func TestWatchdogKick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, w, fired, stepTo := watchdogEnv(t, 10*time.Second)
		for at := 9 * time.Second; at <= 90*time.Second; at += 9 * time.Second {
			stepTo(at)
			w.Kick()
		}
		if n := fired.Load(); n != 0 {
			t.Fatalf("fired %d times although kicked every 9s", n)
		}
		if !c.HasWaiterAt(t0.Add(100*time.Second)) || c.Waiters() != 1 {
			t.Fatalf("want one timer, at t0+100s (last kick + 10s)")
		}
		stepTo(100 * time.Second)
		if n := fired.Load(); n != 1 {
			t.Fatalf("fired %d times, want 1", n)
		}
	})
}

func TestWatchdogSetTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, w, fired, stepTo := watchdogEnv(t, 10*time.Second)
		stepTo(5 * time.Second)
		w.SetTimeout(time.Minute) // WATCHDOG_USEC=60000000
		if !c.HasWaiterAt(t0.Add(65 * time.Second)) {
			t.Fatal("not re-armed at t0+65s")
		}
		stepTo(64 * time.Second)
		if fired.Load() != 0 {
			t.Fatal("fired on the old timeout")
		}
		w.SetTimeout(0) // disarm
		stepTo(time.Hour)
		if fired.Load() != 0 || c.Waiters() != 0 {
			t.Fatal("fired or armed after SetTimeout(0)")
		}
	})
}

func TestWatchdogStopAndTrigger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, w, fired, stepTo := watchdogEnv(t, 10*time.Second)
		w.Stop()
		stepTo(time.Hour)
		if fired.Load() != 0 || c.Waiters() != 0 {
			t.Fatal("fired or armed after Stop")
		}

		c2 := fakeclock.New(t0)
		var n atomic.Int32
		w2 := NewWatchdog(c2, 10*time.Second, nil, func() { n.Add(1) })
		w2.Trigger() // WATCHDOG=trigger
		if n.Load() != 1 {
			t.Fatalf("Trigger: fired %d times, want 1 before it returns", n.Load())
		}
		w2.Trigger()
		c2.SetTime(t0.Add(time.Hour))
		synctest.Wait()
		if n.Load() != 1 {
			t.Fatalf("fired %d times in all, want 1", n.Load())
		}

		w3 := NewWatchdog(c2, 0, nil, func() { n.Add(1) })
		defer w3.Stop()
		synctest.Wait()
		if n.Load() != 1 || c2.Waiters() != 0 {
			t.Fatal("a zero timeout armed or fired")
		}
	})
}

// A ping on its way when the time runs out (in the socket, not yet read:
// a reader behind on a loaded machine, or the new binary's after an
// upgrade's exec) is waited for; a program that only ever has something
// on its way gets at most min(timeout, 5 s) more.
func TestWatchdogWaitsForAMessageOnItsWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fakeclock.New(t0)
		var fired atomic.Int32
		var pending atomic.Bool
		w := NewWatchdog(c, 10*time.Second, pending.Load, func() { fired.Add(1) })
		defer w.Stop()
		step := func(d time.Duration) {
			c.Step(d)
			synctest.Wait()
		}
		pending.Store(true)
		step(10 * time.Second)
		step(pendingGrace)
		if n := fired.Load(); n != 0 {
			t.Fatalf("fired %d times with a ping on its way", n)
		}
		// The reader hands the ping on: a full timeout from now.
		pending.Store(false)
		w.Kick()
		step(10*time.Second - time.Nanosecond)
		if n := fired.Load(); n != 0 {
			t.Fatalf("fired %d times before the kicked timeout", n)
		}
		step(time.Nanosecond)
		if n := fired.Load(); n != 1 {
			t.Fatalf("fired %d times at the timeout with nothing on its way, want 1", n)
		}

		// Always something on its way, never a ping: fired after 5 s more.
		c2 := fakeclock.New(t0)
		var fired2 atomic.Int32
		w2 := NewWatchdog(c2, 30*time.Second, func() bool { return true }, func() { fired2.Add(1) })
		defer w2.Stop()
		c2.SetTime(t0.Add(30 * time.Second))
		synctest.Wait()
		for range 200 {
			if fired2.Load() != 0 || !c2.HasWaiters() {
				break
			}
			c2.Step(pendingGrace)
			synctest.Wait()
		}
		if n, now := fired2.Load(), c2.Now().Sub(t0); n != 1 || now > 30*time.Second+maxPendingGrace+pendingGrace {
			t.Fatalf("fired %d times by t0+%v, want once by t0+%v", n, now, 30*time.Second+maxPendingGrace+pendingGrace)
		}
	})
}
