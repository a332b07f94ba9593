package conformance

import (
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/clock/fakeclock"
	"k8s.io/client-go/util/flowcontrol"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// TestCrashMatchesFlowcontrol runs seeded random sequences of the kubelet's
// backoff operations against backoff.Crash and client-go's
// flowcontrol.Backoff, on fake clocks stepped together, and compares every
// answer. Decide is compared with what the kubelet does with flowcontrol
// (doBackOff: IsInBackOffSince, else Next).
func TestCrashMatchesFlowcontrol(t *testing.T) {
	n := 5000
	if testing.Short() {
		n = 500
	}
	for seed := range n {
		if !t.Run(strconv.Itoa(seed), func(t *testing.T) { crashSequence(t, int64(seed)) }) {
			return
		}
	}
}

func crashSequence(t *testing.T, seed int64) {
	r := rand.New(rand.NewSource(seed))
	initial := time.Duration(1+r.Int63n(int64(20*time.Second))) / time.Millisecond * time.Millisecond
	initial = max(initial, time.Millisecond)
	maxD := initial * time.Duration(1+r.Intn(64))
	var resetAfter time.Duration
	if r.Intn(2) == 0 {
		resetAfter = time.Duration(1 + r.Int63n(int64(4*maxD)))
	}
	jitter := 0.0
	if r.Intn(2) == 0 {
		jitter = r.Float64()
	}

	ourClock := fakeclock.New(t0)
	theirClock := clocktesting.NewFakeClock(t0)
	cfg := backoff.CrashConfig{Initial: initial, Max: maxD, ResetAfter: resetAfter, Clock: ourClock}
	var theirs *flowcontrol.Backoff
	if jitter > 0 {
		// client-go seeds its jitter source from the clock at construction;
		// ours takes the same source, injected.
		src := rand.New(rand.NewSource(t0.UnixNano()))
		cfg.Jitter = func() float64 { return src.Float64() * jitter }
		theirs = flowcontrol.NewFakeBackOffWithJitter(initial, maxD, theirClock, jitter)
	} else {
		theirs = flowcontrol.NewFakeBackOff(initial, maxD, theirClock)
	}
	if resetAfter > 0 {
		theirs.HasExpiredFunc = func(eventTime, lastUpdate time.Time, _ time.Duration) bool {
			return eventTime.Sub(lastUpdate) > resetAfter
		}
	}
	ours := backoff.NewCrash(cfg)

	keys := []string{"a", "b", "c"}
	lastStep := map[string]time.Time{} // when Next last ran per key: the entry's lastUpdate
	reset := resetAfter
	if reset == 0 {
		reset = 2 * maxD
	}
	for op := range 60 + r.Intn(140) {
		key := keys[r.Intn(len(keys))]
		// Event times around now, sometimes far in the past.
		now := ourClock.Now()
		ev := now.Add(-time.Duration(r.Int63n(int64(3 * maxD))))
		switch r.Intn(6) {
		case 0:
			ev = now
		case 1: // on the reset_after boundary, ±1ns
			ev = lastStep[key].Add(reset + time.Duration(r.Intn(3)-1))
		case 2: // on the end of the backoff window, ±1ns
			ev = now.Add(-theirs.Get(key) + time.Duration(r.Intn(3)-1))
		}
		var what string
		switch r.Intn(10) {
		case 0, 1:
			what = "Next"
			ours.Next(key, ev)
			theirs.Next(key, ev)
			lastStep[key] = now
		case 2:
			what = "IsInBackOffSince"
			if a, b := ours.IsInBackOffSince(key, ev), theirs.IsInBackOffSince(key, ev); a != b {
				t.Fatalf("op %d: IsInBackOffSince(%s, now-%v) = %v, client-go %v", op, key, now.Sub(ev), a, b)
			}
		case 3:
			what = "IsInBackOffSinceUpdate"
			if a, b := ours.IsInBackOffSinceUpdate(key, ev), theirs.IsInBackOffSinceUpdate(key, ev); a != b {
				t.Fatalf("op %d: IsInBackOffSinceUpdate = %v, client-go %v", op, a, b)
			}
		case 4, 5:
			what = "Decide"
			var want time.Duration
			if theirs.IsInBackOffSince(key, ev) {
				want = theirs.Get(key) - theirClock.Since(ev)
			} else {
				theirs.Next(key, ev)
				lastStep[key] = now
			}
			if got := ours.Decide(key, ev); got != want {
				t.Fatalf("op %d: Decide(%s, now-%v) = %v, kubelet on client-go %v", op, key, now.Sub(ev), got, want)
			}
		case 6:
			what = "Reset"
			ours.Reset(key)
			theirs.Reset(key)
		case 7:
			what = "GC"
			ours.GC()
			theirs.GC()
		default:
			what = "Step"
			d := time.Duration(r.Int63n(int64(maxD)))
			if r.Intn(5) == 0 {
				d = time.Duration(r.Int63n(int64(3 * max(maxD, resetAfter))))
			}
			ourClock.Step(d)
			theirClock.Step(d)
		}
		for _, k := range keys {
			if a, b := ours.Get(k), theirs.Get(k); a != b {
				t.Fatalf("op %d (%s): Get(%s) = %v, client-go %v (initial %v max %v resetAfter %v jitter %v)",
					op, what, k, a, b, initial, maxD, resetAfter, jitter)
			}
		}
	}
}
