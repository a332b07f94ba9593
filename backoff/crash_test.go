package backoff

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/clock"
	"github.com/supervise-dev/supervise/clock/fakeclock"
)

func kubelet(c clock.Clock) *Crash {
	return NewCrash(CrashConfig{Initial: 10 * time.Second, Max: 5 * time.Minute, Clock: c})
}

// TestCrashKubeletSequence replays the kubelet's sequence: a process that crashes right
// after every start is restarted after 0, 10, 20, 40, 80, 160, 300, 300 s.
func TestCrashKubeletSequence(t *testing.T) {
	c := fakeclock.New(t0)
	b := kubelet(c)
	want := []time.Duration{0, 10, 20, 40, 80, 160, 300, 300, 300}
	for i, w := range want {
		w *= time.Second
		exit := c.Now() // it crashed the moment it started
		got := b.Decide("web", exit)
		if got != w {
			t.Fatalf("crash %d: wait %v, want %v", i+1, got, w)
		}
		if w == 0 {
			continue
		}
		// In CrashLoopBackOff until exactly the end of the window.
		c.Step(w - time.Millisecond)
		if left := b.Decide("web", exit); left != time.Millisecond {
			t.Fatalf("crash %d: 1ms before expiry Decide = %v, want 1ms", i+1, left)
		}
		c.Step(time.Millisecond)
		if got := b.Decide("web", exit); got != 0 {
			t.Fatalf("crash %d: at expiry Decide = %v, want 0 (start)", i+1, got)
		}
	}
	if got := b.Get("web"); got != 5*time.Minute {
		t.Fatalf("delay after the sequence = %v, want 5m", got)
	}
}

// TestCrashResetAfterStableRun: a run longer than reset_after (2 × max) makes
// the next crash restart at once, and the sequence starts over.
func TestCrashResetAfterStableRun(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ran       time.Duration
		wantWaits []time.Duration
	}{
		{"just over reset_after", 10*time.Minute + time.Nanosecond, []time.Duration{0, 10 * time.Second, 20 * time.Second}},
		{"exactly reset_after", 10 * time.Minute, []time.Duration{20 * time.Second, 40 * time.Second, 80 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeclock.New(t0)
			b := kubelet(c)
			b.Decide("web", c.Now()) // start: delay 10s
			c.Step(10 * time.Second)
			b.Decide("web", c.Now().Add(-10*time.Second)) // second start: delay 20s
			c.Step(tc.ran)
			for i, w := range tc.wantWaits {
				exit := c.Now()
				got := b.Decide("web", exit)
				if got != w {
					t.Fatalf("crash %d after the run: wait %v, want %v", i+1, got, w)
				}
				c.Step(got)
				if got > 0 {
					if got := b.Decide("web", exit); got != 0 {
						t.Fatalf("crash %d: Decide at expiry = %v", i+1, got)
					}
				}
			}
		})
	}
}

func TestCrashGC(t *testing.T) {
	c := fakeclock.New(t0)
	b := kubelet(c)
	b.Next("old", c.Now())
	c.Step(time.Minute)
	b.Next("new", c.Now())
	c.Step(10*time.Minute - time.Minute) // "old" last stepped exactly 2 × max ago
	b.GC()
	if b.Len() != 2 {
		t.Fatalf("GC at exactly 2×max dropped an entry: %d left", b.Len())
	}
	c.Step(time.Nanosecond)
	b.GC()
	if b.Get("old") != 0 || b.Get("new") != 10*time.Second || b.Len() != 1 {
		t.Fatalf("after GC: old=%v new=%v len=%d; want old dropped only", b.Get("old"), b.Get("new"), b.Len())
	}
}

func TestCrashQueries(t *testing.T) {
	c := fakeclock.New(t0)
	b := kubelet(c)
	if b.IsInBackOffSince("x", c.Now()) || b.IsInBackOffSinceUpdate("x", c.Now()) || b.Get("x") != 0 {
		t.Fatal("an unknown key is in backoff")
	}
	b.Next("x", c.Now()) // delay 10s, lastUpdate t0
	tests := []struct {
		name        string
		step        time.Duration // clock moves by this first
		event       time.Duration // event time, relative to t0
		since       bool
		sinceUpdate bool
	}{
		{"right after", 0, 0, true, true},
		{"9s after the exit", 9 * time.Second, 0, true, true},
		{"10s after the exit", time.Second, 0, false, true},
		{"event 10s after the update", 0, 10 * time.Second, true, false},
		{"event after reset_after", 20 * time.Minute, 10*time.Minute + 1, false, false},
	}
	for _, tc := range tests {
		c.Step(tc.step)
		ev := t0.Add(tc.event)
		if got := b.IsInBackOffSince("x", ev); got != tc.since {
			t.Errorf("%s: IsInBackOffSince = %v, want %v", tc.name, got, tc.since)
		}
		if got := b.IsInBackOffSinceUpdate("x", ev); got != tc.sinceUpdate {
			t.Errorf("%s: IsInBackOffSinceUpdate = %v, want %v", tc.name, got, tc.sinceUpdate)
		}
	}
	b.Reset("x")
	if b.Get("x") != 0 || b.Decide("x", c.Now()) != 0 {
		t.Fatal("Reset did not clear the key")
	}
}

func TestCrashJitterAndDefaults(t *testing.T) {
	c := fakeclock.New(t0)
	fracs := []float64{0.5, 0.25, 0}
	i := 0
	b := NewCrash(CrashConfig{Clock: c, Jitter: func() float64 { f := fracs[i%len(fracs)]; i++; return f }})
	// Defaults: initial 10s, max 5m. Each step adds frac × the previous delay.
	want := []time.Duration{15 * time.Second, 30*time.Second + 3750*time.Millisecond, 67500 * time.Millisecond}
	for n, w := range want {
		b.Next("k", c.Now())
		if got := b.Get("k"); got != w {
			t.Fatalf("step %d: delay %v, want %v", n+1, got, w)
		}
	}
	// Jitter never lifts the delay over max.
	r := rand.New(rand.NewPCG(1, 2))
	j := NewCrash(CrashConfig{Initial: time.Second, Max: time.Minute, Clock: c, Jitter: r.Float64})
	for range 50 {
		j.Next("k", c.Now())
		if d := j.Get("k"); d > time.Minute {
			t.Fatalf("delay %v over max", d)
		}
	}
}

func TestCrashZeroInitialWithMaxMeansNoDelay(t *testing.T) {
	c := fakeclock.New(time.Unix(0, 0))
	b := NewCrash(CrashConfig{Initial: 0, Max: time.Minute, Clock: c})
	for i := range 5 {
		if w := b.Decide("k", c.Now()); w != 0 {
			t.Fatalf("crash %d: wait %v, want 0", i, w)
		}
	}
}

// Entry and Restore carry a key's step to another Crash (a new binary
// after an upgrade in place): the window and the doubling go on.
func TestCrashEntryRestore(t *testing.T) {
	clk := fakeclock.New(time.Unix(1000, 0))
	a := NewCrash(CrashConfig{Initial: 10 * time.Second, Max: time.Minute, Clock: clk})
	a.Next("web", clk.Now())
	a.Next("web", clk.Now())
	step, ok := a.Entry("web")
	if !ok || step.Delay != 20*time.Second {
		t.Fatalf("Entry = %+v, %v; want a 20 s delay", step, ok)
	}
	b := NewCrash(CrashConfig{Initial: 10 * time.Second, Max: time.Minute, Clock: clk})
	b.Restore("web", step)
	if left := b.Left("web", clk.Now()); left != 20*time.Second {
		t.Errorf("after Restore, Left = %v, want 20 s", left)
	}
	b.Restore("web", Step{Delay: time.Hour, LastUpdate: clk.Now()})
	if got, _ := b.Entry("web"); got.Delay != time.Minute {
		t.Errorf("a restored delay past Max is %v, want Max", got.Delay)
	}
	if _, ok := b.Entry("db"); ok {
		t.Error("Entry of a key never seen says ok")
	}
}
