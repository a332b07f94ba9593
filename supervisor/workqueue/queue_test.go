package workqueue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/clock/fakeclock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newTestQueue(t *testing.T) (*Queue[string], *fakeclock.Clock) {
	t.Helper()
	c := fakeclock.New(t0)
	q := New(Config[string]{Name: "test", Clock: c, RateLimiter: backoff.NewItemExponential[string](time.Second, time.Minute)})
	t.Cleanup(q.ShutDown)
	return q, c
}

// get is Get bounded by a real-time deadline, so a broken queue fails the
// test instead of hanging it.
func get(t *testing.T, q *Queue[string]) string {
	t.Helper()
	type res struct {
		k  string
		sd bool
	}
	ch := make(chan res, 1)
	go func() { k, sd := q.Get(); ch <- res{k, sd} }()
	select {
	case r := <-ch:
		if r.sd {
			t.Fatal("Get reported shutdown")
		}
		return r.k
	case <-time.After(10 * time.Second):
		t.Fatal("Get blocked for 10s")
		return ""
	}
}

// step moves the fake clock once the waiting loop has settled (or ended):
// it has taken every wake-up and armed its timer for the earliest entry. Moved
// while the loop was between reading the time and arming its timer, the
// clock would put that timer past the time the test waits for.
func step(t *testing.T, q *Queue[string], c *fakeclock.Clock, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
		q.mu.Lock()
		settled := len(q.wake) == 0 && (len(q.waiting) == 0 && q.armed == 0 || len(q.waiting) > 0 && q.armed == q.waiting[0].ready)
		q.mu.Unlock()
		select {
		case <-q.loopDone: // shut down: nothing to settle
			settled = true
		default:
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiting loop did not settle in 10s")
		}
	}
	c.Step(d)
}

func TestAddDeduplicates(t *testing.T) {
	q, _ := newTestQueue(t)
	for range 5 {
		q.Add("a")
	}
	q.Add("b")
	q.Add("a")
	if q.Len() != 2 {
		t.Fatalf("Len = %d, want 2", q.Len())
	}
	if k := get(t, q); k != "a" {
		t.Fatalf("first Get = %q, want a", k)
	}
	if k := get(t, q); k != "b" {
		t.Fatalf("second Get = %q, want b", k)
	}
	if q.Len() != 0 {
		t.Fatalf("a key added 6 times was queued more than once: Len = %d", q.Len())
	}
}

func TestAddWhileProcessingRequeuesOnDone(t *testing.T) {
	q, _ := newTestQueue(t)
	q.Add("a")
	k := get(t, q)
	q.Add("a")
	q.Add("a")
	if q.Len() != 0 {
		t.Fatalf("a held key was queued: Len = %d", q.Len())
	}
	q.Done(k)
	if q.Len() != 1 {
		t.Fatalf("after Done, Len = %d, want 1", q.Len())
	}
	k = get(t, q)
	q.Done(k)
	q.Done(k) // not held any more: no effect
	q.Done("never-added")
	if q.Len() != 0 {
		t.Fatalf("Len = %d after the re-run, want 0", q.Len())
	}
}

func TestAddAfter(t *testing.T) {
	q, c := newTestQueue(t)
	q.AddAfter("late", 3*time.Second)
	q.AddAfter("early", time.Second)
	q.AddAfter("now", 0)
	if k := get(t, q); k != "now" {
		t.Fatalf("Get = %q, want the undelayed key", k)
	}
	q.Done("now")
	step(t, q, c, time.Second-time.Nanosecond)
	if q.Len() != 0 {
		t.Fatal("a key became ready early")
	}
	step(t, q, c, time.Nanosecond)
	if k := get(t, q); k != "early" {
		t.Fatalf("Get = %q, want early", k)
	}
	step(t, q, c, 2*time.Second)
	if k := get(t, q); k != "late" {
		t.Fatalf("Get = %q, want late", k)
	}
}

// A sentinel added after everything else proves the waiting loop has
// nothing due before it: it is handed out only after every earlier key.
func sentinel(t *testing.T, q *Queue[string], c *fakeclock.Clock) {
	t.Helper()
	q.AddAfter("sentinel", time.Nanosecond)
	step(t, q, c, time.Nanosecond)
	if k := get(t, q); k != "sentinel" {
		t.Fatalf("Get = %q, want only the sentinel", k)
	}
	q.Done("sentinel")
	if n := q.Len(); n != 0 {
		t.Fatalf("Len = %d after the sentinel", n)
	}
}

func TestAddAfterKeepsEarliest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delays []time.Duration
	}{
		{"earlier second", []time.Duration{10 * time.Second, 5 * time.Second}},
		{"later second", []time.Duration{5 * time.Second, 10 * time.Second}},
		{"many", []time.Duration{9 * time.Second, 7 * time.Second, 5 * time.Second, 8 * time.Second, 10 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, c := newTestQueue(t)
			for _, d := range tc.delays {
				q.AddAfter("k", d)
			}
			if st := q.Stats(); st.Waiting != 1 {
				t.Fatalf("Waiting = %d, want 1", st.Waiting)
			}
			step(t, q, c, 5*time.Second-time.Nanosecond)
			if q.Len() != 0 {
				t.Fatal("ready before the earliest time")
			}
			step(t, q, c, time.Nanosecond)
			if k := get(t, q); k != "k" {
				t.Fatalf("Get = %q", k)
			}
			q.Done("k")
			// The later times were merged, not kept: nothing more comes.
			step(t, q, c, time.Minute)
			sentinel(t, q, c)
		})
	}
}

func TestAddAfterWhileQueuedOrHeld(t *testing.T) {
	q, c := newTestQueue(t)
	q.Add("k")
	q.AddAfter("k", time.Second) // queued and waiting at once, as in client-go
	k := get(t, q)
	step(t, q, c, time.Second) // due while held: marked, queued again by Done
	q.Done(k)
	if got := get(t, q); got != "k" {
		t.Fatalf("Get = %q, want k again", got)
	}
	q.Done("k")
	sentinel(t, q, c)
}

func TestRateLimited(t *testing.T) {
	q, c := newTestQueue(t) // exponential 1s → 1m
	q.AddRateLimited("k")
	q.AddRateLimited("k") // waiting: keeps the earlier time (1s), but counts
	if n := q.NumRequeues("k"); n != 2 {
		t.Fatalf("NumRequeues = %d, want 2", n)
	}
	step(t, q, c, time.Second)
	k := get(t, q)
	q.AddRateLimited(k) // 3rd failure: 4s
	q.Done(k)
	step(t, q, c, 4*time.Second-time.Nanosecond)
	if q.Len() != 0 {
		t.Fatal("ready before 4s")
	}
	step(t, q, c, time.Nanosecond)
	k = get(t, q)
	q.Forget(k)
	q.Done(k)
	if n := q.NumRequeues("k"); n != 0 {
		t.Fatalf("after Forget NumRequeues = %d", n)
	}
	q.AddRateLimited("k")
	step(t, q, c, time.Second)
	if k := get(t, q); k != "k" {
		t.Fatalf("after Forget the delay did not start over: %q", k)
	}
}

func TestShutDown(t *testing.T) {
	q, c := newTestQueue(t)
	q.Add("a")
	q.Add("b")
	held := get(t, q)
	q.Add(held) // marked while held: must survive shutdown
	q.AddAfter("delayed", time.Second)
	q.ShutDown()
	select {
	case <-q.loopDone:
	default:
		t.Fatal("ShutDown returned before the waiting loop stopped")
	}
	if !q.ShuttingDown() {
		t.Fatal("ShuttingDown = false")
	}
	q.Add("c")
	q.AddAfter("d", 0)
	step(t, q, c, time.Hour)
	if k := get(t, q); k != "b" {
		t.Fatalf("Get after ShutDown = %q, want the queued b", k)
	}
	q.Done("b")
	q.Done(held)
	if k := get(t, q); k != held {
		t.Fatalf("Get = %q, want %q re-queued by Done", k, held)
	}
	q.Done(held)
	if k, sd := q.Get(); !sd || k != "" {
		t.Fatalf("Get on an empty shut-down queue = %q, %v", k, sd)
	}
	if st := q.Stats(); st.Waiting != 0 {
		t.Fatalf("delayed keys kept after ShutDown: %d", st.Waiting)
	}
	q.ShutDown() // idempotent
}

// TestShutDownWithDrainLosesNothing runs in a synctest bubble, so "the
// drain is still waiting" is a fact (every goroutine is blocked), not a guess.
func TestShutDownWithDrainLosesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Config[int]{})
		const keys = 200
		var mu sync.Mutex
		runs := map[int]int{}
		held := map[int]bool{}
		holding, gate := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					k, sd := q.Get()
					if sd {
						return
					}
					mu.Lock()
					if held[k] {
						t.Errorf("key %d held twice", k)
					}
					held[k] = true
					runs[k]++
					first := runs[k] == 1
					mu.Unlock()
					if k == 0 && first {
						close(holding)
						<-gate // hold key 0 across the start of the drain
					}
					mu.Lock()
					held[k] = false
					mu.Unlock()
					q.Done(k)
				}
			})
		}
		q.Add(0)
		<-holding
		q.Add(0) // marked while held: must run again
		for k := 1; k < keys; k++ {
			q.Add(k)
		}
		drained := make(chan struct{})
		go func() { q.ShutDownWithDrain(); close(drained) }()
		synctest.Wait()
		select {
		case <-drained:
			t.Fatal("drain returned while key 0 was held")
		default:
		}
		q.Add(keys) // after shutdown: ignored
		close(gate)
		<-drained
		if q.Len() != 0 {
			t.Fatalf("%d keys left after the drain", q.Len())
		}
		wg.Wait()
		for k := range keys {
			want := 1
			if k == 0 {
				want = 2
			}
			if runs[k] != want {
				t.Errorf("key %d ran %d times, want %d", k, runs[k], want)
			}
		}
		if runs[keys] != 0 {
			t.Error("a key added after shutdown ran")
		}
	})
}

func TestConcurrentInvariants(t *testing.T) {
	q := New(Config[int]{})
	const keys, producers, workers, adds = 50, 4, 8, 20000
	var addSeq [keys]atomic.Int64
	var covered [keys]atomic.Int64
	var holders [keys]atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				k, sd := q.Get()
				if sd {
					return
				}
				if n := holders[k].Add(1); n != 1 {
					t.Errorf("worker %d: key %d held by %d workers", w, k, n)
				}
				// Everything added up to here is covered by this run.
				covered[k].Store(addSeq[k].Load())
				holders[k].Add(-1)
				q.Done(k)
			}
		})
	}
	var pwg sync.WaitGroup
	for p := range producers {
		pwg.Go(func() {
			for i := range adds {
				k := (i*7 + p) % keys
				addSeq[k].Add(1)
				q.Add(k)
			}
		})
	}
	pwg.Wait()
	q.ShutDownWithDrain()
	wg.Wait()
	for k := range keys {
		if covered[k].Load() != addSeq[k].Load() {
			t.Errorf("key %d: last run covered %d adds of %d: an add was lost", k, covered[k].Load(), addSeq[k].Load())
		}
	}
	st := q.Stats()
	if st.Gets > producers*adds || st.Gets < keys {
		t.Errorf("Gets = %d for %d adds of %d keys", st.Gets, producers*adds, keys)
	}
}

func TestStats(t *testing.T) {
	q, c := newTestQueue(t)
	q.Add("a")
	q.Add("a")
	q.Add("b")
	q.AddAfter("c", time.Minute)
	q.AddRateLimited("d")
	step(t, q, c, 2*time.Second) // d is due after 1s
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitForWaiters(ctx, 1); err != nil { // the loop re-armed for c
		t.Fatal(err)
	}
	k := get(t, q) // a, queued 2s ago
	step(t, q, c, 3*time.Second)
	st := q.Stats()
	want := Stats{Name: "test", Depth: 2, Waiting: 1, Processing: 1, Adds: 3, Retries: 2, Gets: 1,
		LongestRunning: 3 * time.Second, UnfinishedWork: 3 * time.Second, LastLatency: 2 * time.Second, MeanLatency: 2 * time.Second}
	want.QueueTime.Buckets[9], want.QueueTime.Count, want.QueueTime.Sum = 1, 1, 2*time.Second // ≤ 10s
	if st != want {
		t.Fatalf("Stats = %+v\nwant    %+v", st, want)
	}
	q.Done(k)       // held 3s
	k2 := get(t, q) // b, queued 5s ago
	step(t, q, c, 20*time.Second)
	st = q.Stats()
	if st.LastLatency != 5*time.Second || st.MeanLatency != 3500*time.Millisecond {
		t.Fatalf("latency last %v mean %v, want 5s, 3.5s", st.LastLatency, st.MeanLatency)
	}
	if st.QueueTime.Buckets[9] != 2 || st.QueueTime.Sum != 7*time.Second {
		t.Errorf("queue time %+v, want 2 in the ≤10s bucket, sum 7s", st.QueueTime)
	}
	if st.WorkTime.Buckets[9] != 1 || st.WorkTime.Count != 1 || st.WorkTime.Sum != 3*time.Second {
		t.Errorf("work time %+v, want 1 in the ≤10s bucket, sum 3s", st.WorkTime)
	}
	q.Done(k2) // held 20s: above every bound
	if st := q.Stats(); st.WorkTime.Buckets[len(HistogramBounds)] != 1 || st.UnfinishedWork != 0 {
		t.Errorf("work time %+v unfinished %v, want one above every bound and nothing held", st.WorkTime, st.UnfinishedWork)
	}
}

func TestHistogramBuckets(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{0, 10, 11, time.Millisecond, time.Millisecond + 1, 10 * time.Second, time.Hour} {
		h.observe(d)
	}
	want := [len(HistogramBounds) + 1]uint64{0: 2, 1: 1, 5: 1, 6: 1, 9: 1, 10: 1}
	if h.Buckets != want || h.Count != 7 {
		t.Fatalf("buckets %v count %d, want %v 7", h.Buckets, h.Count, want)
	}
}

func TestManyDelayedKeysComeOutInOrder(t *testing.T) {
	q, c := newTestQueue(t)
	const n = 1000
	for i := range n {
		// A permutation of 1..n seconds.
		q.AddAfter(fmt.Sprint((i*337)%n+1), time.Duration((i*337)%n+1)*time.Second)
	}
	step(t, q, c, n*time.Second)
	for i := 1; i <= n; i++ {
		if k := get(t, q); k != fmt.Sprint(i) {
			t.Fatalf("Get %d = %s", i, k)
		}
	}
}
