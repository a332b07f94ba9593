package fakeclock

import (
	"context"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func fired(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestFakeClockTimerFiresAtDeadline(t *testing.T) {
	c := New(t0)
	tm := c.NewTimer(10 * time.Second)
	if got := c.Waiters(); got != 1 {
		t.Fatalf("waiters = %d, want 1", got)
	}
	c.Step(10*time.Second - 1)
	if fired(tm.C()) {
		t.Fatal("fired 1ns early")
	}
	c.Step(1)
	select {
	case at := <-tm.C():
		if !at.Equal(t0.Add(10 * time.Second)) {
			t.Fatalf("fired with %v, want %v", at, t0.Add(10*time.Second))
		}
	default:
		t.Fatal("did not fire at its deadline")
	}
	if c.HasWaiters() {
		t.Fatal("a fired timer is still a waiter")
	}
}

func TestFakeClockStopAndResetDropStaleTicks(t *testing.T) {
	c := New(t0)
	tm := c.NewTimer(time.Second)
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer = false")
	}
	if tm.Stop() {
		t.Fatal("second Stop = true")
	}
	c.Step(time.Hour)
	if fired(tm.C()) {
		t.Fatal("a stopped timer fired")
	}

	// Fired but not received: Reset must drop the old tick (Go 1.23 rule).
	tm.Reset(time.Second)
	c.Step(time.Second)
	if tm.Reset(5 * time.Second) {
		t.Fatal("Reset of a fired timer reported it pending")
	}
	if fired(tm.C()) {
		t.Fatal("stale tick delivered after Reset")
	}
	c.Step(5 * time.Second)
	if !fired(tm.C()) {
		t.Fatal("reset timer did not fire")
	}

	// A non-positive duration fires at once.
	tm.Reset(0)
	if !fired(tm.C()) {
		t.Fatal("Reset(0) did not fire at once")
	}
}

func TestFakeClockFiresInDeadlineOrder(t *testing.T) {
	c := New(t0)
	order := make(chan int, 3)
	for i, d := range []time.Duration{3, 1, 2} {
		c.AfterFunc(d*time.Second, func() { order <- i })
	}
	if at, ok := c.NextWakeup(); !ok || !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("NextWakeup = %v %v, want %v", at, ok, t0.Add(time.Second))
	}
	c.SetTime(t0.Add(time.Minute))
	// AfterFunc callbacks run in their own goroutines, so collect all three.
	got := map[int]bool{}
	for range 3 {
		select {
		case i := <-order:
			got[i] = true
		case <-time.After(10 * time.Second):
			t.Fatal("AfterFunc callback never ran")
		}
	}
	if len(got) != 3 {
		t.Fatalf("callbacks ran %v", got)
	}
}

func TestFakeClockWaitForWaiters(t *testing.T) {
	c := New(t0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan time.Time)
	go func() { got <- <-c.After(time.Minute) }()
	if err := c.WaitForWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	c.Step(time.Minute)
	if at := <-got; !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("After delivered %v", at)
	}

	short, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := c.WaitForWaiters(short, 5); err == nil {
		t.Fatal("WaitForWaiters returned nil with no waiters and a cancelled ctx")
	}
}
