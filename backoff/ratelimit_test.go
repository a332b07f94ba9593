package backoff

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
)

func TestItemExponential(t *testing.T) {
	r := NewItemExponential[string](5*time.Millisecond, 1000*time.Second)
	// 5ms × 2^n, capped at 1000s from n = 18 (5ms × 2^18 = 1310.72s).
	for n := range 25 {
		want := min(5*time.Millisecond<<n, 1000*time.Second)
		if got := r.When("a"); got != want {
			t.Fatalf("failure %d: %v, want %v", n+1, got, want)
		}
	}
	if got := r.NumRequeues("a"); got != 25 {
		t.Fatalf("NumRequeues = %d, want 25", got)
	}
	if got := r.When("b"); got != 5*time.Millisecond {
		t.Fatalf("a second key shares history: %v", got)
	}
	r.Forget("a")
	if got, n := r.When("a"), r.NumRequeues("a"); got != 5*time.Millisecond || n != 1 {
		t.Fatalf("after Forget: %v, %d requeues; want 5ms, 1", got, n)
	}
}

func TestExponentialSaturates(t *testing.T) {
	tests := []struct {
		name      string
		base, max time.Duration
		n         int
		want      time.Duration
	}{
		{"1ns at 62", 1, math.MaxInt64, 62, 1 << 62},
		{"1ns at 63 overflows", 1, math.MaxInt64, 63, math.MaxInt64},
		{"1ns at 1000", 1, time.Hour, 1000, time.Hour},
		{"large base", time.Hour, 2 * time.Hour, 40, 2 * time.Hour},
		{"base over max", time.Hour, time.Minute, 0, time.Minute},
		{"zero base", 0, time.Hour, 10, 0},
	}
	for _, tc := range tests {
		if got := exponential(tc.base, tc.max, tc.n); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestBucketOnFakeClock(t *testing.T) {
	c := fakeclock.New(t0)
	b := NewBucket[int](10, 3, c)
	// A full bucket of 3: three immediate tries, then one every 100ms.
	for i := range 3 {
		if d := b.When(i); d != 0 {
			t.Fatalf("try %d from a full bucket waits %v", i+1, d)
		}
	}
	if d := b.When(0); d != 100*time.Millisecond {
		t.Fatalf("4th try waits %v, want 100ms", d)
	}
	if d := b.When(0); d != 200*time.Millisecond {
		t.Fatalf("5th try waits %v, want 200ms", d)
	}
	c.Step(time.Second) // pays back the debt and refills to burst 3
	for i := range 3 {
		if d := b.When(i); d != 0 {
			t.Fatalf("after refill, try %d waits %v", i+1, d)
		}
	}
	if b.NumRequeues(0) != 0 {
		t.Fatal("a bucket counts requeues")
	}
}

func TestMaxOfAndDefault(t *testing.T) {
	c := fakeclock.New(t0)
	r := DefaultControllerRateLimiter[string](c)
	// 100 distinct keys drain the burst; the exponential part is 5ms each.
	for i := range 100 {
		if d := r.When(fmt.Sprint("key-", i)); d != 5*time.Millisecond {
			t.Fatalf("key %d: %v, want 5ms", i, d)
		}
	}
	// The bucket is empty: the 101st try waits 100ms although its key is new.
	if d := r.When("new"); d != 100*time.Millisecond {
		t.Fatalf("101st try waits %v, want the bucket's 100ms", d)
	}
	c.Step(time.Hour)
	r.When("k")
	r.When("k")
	if n := r.NumRequeues("k"); n != 2 {
		t.Fatalf("NumRequeues = %d, want 2", n)
	}
	r.Forget("k")
	if n := r.NumRequeues("k"); n != 0 {
		t.Fatalf("after Forget NumRequeues = %d", n)
	}
	m := NewMaxOf[int]()
	if m.When(1) != 0 || m.NumRequeues(1) != 0 {
		t.Fatal("an empty MaxOf delays")
	}
}
