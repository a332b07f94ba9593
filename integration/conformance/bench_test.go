package conformance

import (
	"flag"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ours "github.com/supervise-dev/supervise/supervisor/workqueue"
	"k8s.io/client-go/util/workqueue"
)

// benchQueue is what the benchmarks use of either queue.
type benchQueue interface {
	Add(string)
	AddAfter(string, time.Duration)
	Get() (string, bool)
	Done(string)
	ShutDown()
}

// Both queues are the full rate-limited kind with the default controller
// limiter and the real clock, as the supervisor uses ours.
var impls = []struct {
	name string
	new  func() benchQueue
}{
	{"supervise", func() benchQueue {
		return ours.New(ours.Config[string]{})
	}},
	{"client-go", func() benchQueue {
		return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{})
	}},
}

func keys(n int, prefix string) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = prefix + strconv.Itoa(i)
	}
	return ks
}

// dedupKeys is small so that most Adds hit a key that is already queued or
// held: the heavy-deduplication case of a supervisor flooded with intents.
// manyKeys is the light case: most Adds queue a key and become a Get.
var (
	dedupKeys = keys(64, "program-")
	manyKeys  = keys(1<<14, "program-")
)

// benchThroughput: two producers Add b.N times over 64 keys while `workers`
// goroutines Get and Done; the clock stops when every worker has seen
// shutdown after the last Add. ns/op is per Add, processed/op how many of
// those Adds became a Get.
func benchThroughput(b *testing.B, newQ func() benchQueue, workers int, ks []string) {
	q := newQ()
	var processed sync.WaitGroup
	counts := make([]int, workers)
	b.ReportAllocs()
	b.ResetTimer()
	for w := range workers {
		processed.Go(func() {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				counts[w]++
				q.Done(k)
			}
		})
	}
	var producers sync.WaitGroup
	for p := range 2 {
		producers.Go(func() {
			for i := p; i < b.N; i += 2 {
				q.Add(ks[i&(len(ks)-1)])
			}
		})
	}
	producers.Wait()
	q.ShutDown()
	processed.Wait()
	b.StopTimer()
	total := 0
	for _, c := range counts {
		total += c
	}
	b.ReportMetric(float64(total)/float64(b.N), "processed/op")
}

// benchCycle is the closed-loop form, free of the producers' speed: 64 keys
// circulate, and each op is one worker cycle Get → Add ×3 (the first marks
// the held key, two are deduplicated) → Done (which queues it again).
func benchCycle(b *testing.B, newQ func() benchQueue, workers int) {
	q := newQ()
	defer q.ShutDown()
	for _, k := range dedupKeys {
		q.Add(k)
	}
	var ops atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ops.Add(1) <= int64(b.N) {
				k, _ := q.Get()
				q.Add(k)
				q.Add(k)
				q.Add(k)
				q.Done(k)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
}

func BenchmarkCycle(b *testing.B) {
	for _, workers := range []int{1, 2, 8} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("workers=%d/%s", workers, impl.name), func(b *testing.B) {
				benchCycle(b, impl.new, workers)
			})
		}
	}
}

func BenchmarkThroughput(b *testing.B) {
	for _, ks := range [][]string{dedupKeys, manyKeys} {
		for _, workers := range []int{1, 2, 8} {
			for _, impl := range impls {
				b.Run(fmt.Sprintf("keys=%d/workers=%d/%s", len(ks), workers, impl.name), func(b *testing.B) {
					benchThroughput(b, impl.new, workers, ks)
				})
			}
		}
	}
}

const waitingKeys = 100_000

var (
	waitKeys  = keys(waitingKeys, "waiting-")
	freshKeys = keys(waitingKeys, "fresh-")
)

// prefilled returns a queue holding 100,000 keys that wait between one and
// two hours.
func prefilled(newQ func() benchQueue, r *rand.Rand) benchQueue {
	q := newQ()
	for _, k := range waitKeys {
		q.AddAfter(k, time.Hour+time.Duration(r.Int63n(int64(time.Hour))))
	}
	barrier(q)
	return q
}

// barrier returns once q's waiting loop has taken in every AddAfter before
// it: client-go hands AddAfter to its loop through a channel, so a delayed
// sentinel that comes out of Get proves the loop got past everything sent
// before it.
func barrier(q benchQueue) {
	q.AddAfter("sentinel", time.Nanosecond)
	k, _ := q.Get()
	q.Done(k)
}

// benchAddAfterUpdate: AddAfter on keys already waiting among 100,000, with
// random new delays (about half earlier, which moves the key in the heap).
func benchAddAfterUpdate(b *testing.B, newQ func() benchQueue) {
	r := rand.New(rand.NewSource(1))
	q := prefilled(newQ, r)
	defer q.ShutDown()
	delays := make([]time.Duration, 1<<16)
	for i := range delays {
		delays[i] = time.Hour + time.Duration(r.Int63n(int64(time.Hour)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		q.AddAfter(waitKeys[(i*7919)%waitingKeys], delays[i&(1<<16-1)])
	}
	barrier(q)
}

// benchAddAfterInsert: AddAfter of new keys into a heap already holding
// 100,000. Every 100,000 inserts the queue is rebuilt off the clock.
func benchAddAfterInsert(b *testing.B, newQ func() benchQueue) {
	r := rand.New(rand.NewSource(2))
	b.StopTimer()
	q := prefilled(newQ, r)
	b.ReportAllocs()
	b.StartTimer()
	for i := range b.N {
		if i > 0 && i%waitingKeys == 0 {
			barrier(q)
			b.StopTimer()
			q.ShutDown()
			q = prefilled(newQ, r)
			b.StartTimer()
		}
		q.AddAfter(freshKeys[i%waitingKeys], time.Hour+time.Duration(i))
	}
	barrier(q)
	b.StopTimer()
	q.ShutDown()
}

func BenchmarkAddAfter100k(b *testing.B) {
	for _, impl := range impls {
		b.Run("update/"+impl.name, func(b *testing.B) { benchAddAfterUpdate(b, impl.new) })
	}
	for _, impl := range impls {
		b.Run("insert/"+impl.name, func(b *testing.B) { benchAddAfterInsert(b, impl.new) })
	}
}

var sideBySide = flag.Bool("sidebyside", false, "run TestSideBySide: ours and client-go's benchmarks in one run, with ratios")

// TestSideBySide runs every benchmark for both queues in one process and
// prints a table with the ratios. Run it with
//
//	go test -run TestSideBySide -sidebyside -v
func TestSideBySide(t *testing.T) {
	if !*sideBySide {
		t.Skip("benchmarks: run with -sidebyside")
	}
	type pair struct {
		name string
		run  func(b *testing.B, newQ func() benchQueue)
	}
	var pairs []pair
	for _, w := range []int{1, 2, 8} {
		pairs = append(pairs, pair{fmt.Sprintf("Get/Add×3/Done cycle, %d worker(s)", w),
			func(b *testing.B, newQ func() benchQueue) { benchCycle(b, newQ, w) }})
	}
	for _, ks := range [][]string{dedupKeys, manyKeys} {
		for _, w := range []int{1, 2, 8} {
			pairs = append(pairs, pair{fmt.Sprintf("Add/Get/Done, %d worker(s), %d keys", w, len(ks)),
				func(b *testing.B, newQ func() benchQueue) { benchThroughput(b, newQ, w, ks) }})
		}
	}
	pairs = append(pairs,
		pair{"AddAfter update, 100k waiting", benchAddAfterUpdate},
		pair{"AddAfter insert, 100k waiting", benchAddAfterInsert})

	t.Logf("%-38s %11s %11s %7s  %10s %10s  %9s %9s  %11s %11s", "benchmark", "ours ns/op", "c-go ns/op", "speed×",
		"ours al/op", "c-go al/op", "ours B/op", "c-go B/op", "ours proc/op", "c-go proc/op")
	for _, p := range pairs {
		var res [2]testing.BenchmarkResult
		for i, impl := range impls {
			res[i] = testing.Benchmark(func(b *testing.B) { p.run(b, impl.new) })
		}
		o, c := res[0], res[1]
		// processed/op: the share of Adds that became a Get (the rest were
		// deduplicated); it differs between runs and implementations.
		t.Logf("%-38s %11.1f %11.1f %7.2f  %10.3f %10.3f  %9d %9d  %11.4f %11.4f", p.name,
			nsPerOp(o), nsPerOp(c), nsPerOp(c)/nsPerOp(o),
			allocsPerOp(o), allocsPerOp(c), o.AllocedBytesPerOp(), c.AllocedBytesPerOp(),
			o.Extra["processed/op"], c.Extra["processed/op"])
	}
}

func nsPerOp(r testing.BenchmarkResult) float64 { return float64(r.T.Nanoseconds()) / float64(r.N) }
func allocsPerOp(r testing.BenchmarkResult) float64 {
	return float64(r.MemAllocs) / float64(r.N)
}
