package conformance

import (
	"math/rand"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/clock/fakeclock"
	ours "github.com/supervise-dev/supervise/supervisor/workqueue"
	"k8s.io/client-go/util/workqueue"
)

// TestQueueMatchesClientGo runs seeded random sequences of queue operations
// on our queue and on client-go's rate-limited queue, both with the default
// controller rate limiter, inside a synctest bubble: after every operation
// synctest.Wait lets both waiting loops settle, then Len, NumRequeues and
// every Get (the exact key, ties included) must agree.
//
// Ours runs on a FakeClock stepped together with the bubble's time, which
// client-go reads through its real clock.
func TestQueueMatchesClientGo(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	for seed := range n {
		if !t.Run(strconv.Itoa(seed), func(t *testing.T) { queueSequence(t, int64(seed)) }) {
			return
		}
	}
}

func queueSequence(t *testing.T, seed int64) {
	synctest.Test(t, func(t *testing.T) {
		r := rand.New(rand.NewSource(seed))
		clock := fakeclock.New(time.Now())
		a := ours.New(ours.Config[string]{Clock: clock, RateLimiter: backoff.DefaultControllerRateLimiter[string](clock)})
		b := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{})
		defer a.ShutDown()
		defer b.ShutDown()

		nkeys := 2 + r.Intn(12)
		// A few delays only, so ready times often tie.
		delays := []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second}
		var held []string
		var log []string
		fail := func(op int, format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d op %d: "+format+"\nops: %v", append(append([]any{seed, op}, args...), log)...)
		}
		for op := range 100 + r.Intn(300) {
			k := "k" + strconv.Itoa(r.Intn(nkeys))
			switch c := r.Intn(20); {
			case c < 5:
				log = append(log, "Add "+k)
				a.Add(k)
				b.Add(k)
			case c < 8:
				d := delays[r.Intn(len(delays))]
				log = append(log, "AddAfter "+k+" "+d.String())
				a.AddAfter(k, d)
				b.AddAfter(k, d)
			case c < 10:
				log = append(log, "AddRateLimited "+k)
				a.AddRateLimited(k)
				b.AddRateLimited(k)
			case c < 11:
				log = append(log, "Forget "+k)
				a.Forget(k)
				b.Forget(k)
			case c < 15:
				if a.Len() == 0 || b.Len() == 0 {
					continue
				}
				ka, sa := a.Get()
				kb, sb := b.Get()
				log = append(log, "Get "+ka)
				if ka != kb || sa != sb {
					fail(op, "Get = %q %v, client-go %q %v", ka, sa, kb, sb)
				}
				held = append(held, ka)
			case c < 18:
				if len(held) == 0 {
					continue
				}
				i := r.Intn(len(held))
				log = append(log, "Done "+held[i])
				a.Done(held[i])
				b.Done(held[i])
				held = slices.Delete(held, i, i+1)
			case c < 19:
				d := delays[r.Intn(len(delays))] * time.Duration(r.Intn(4))
				log = append(log, "Sleep "+d.String())
				time.Sleep(d)
				clock.Step(d)
			default:
				if r.Intn(10) == 0 {
					log = append(log, "ShutDown")
					a.ShutDown()
					b.ShutDown()
				}
			}
			synctest.Wait()
			if la, lb := a.Len(), b.Len(); la != lb {
				fail(op, "Len = %d, client-go %d", la, lb)
			}
			if na, nb := a.NumRequeues(k), b.NumRequeues(k); na != nb {
				fail(op, "NumRequeues(%s) = %d, client-go %d", k, na, nb)
			}
			if sa, sb := a.ShuttingDown(), b.ShuttingDown(); sa != sb {
				fail(op, "ShuttingDown = %v, client-go %v", sa, sb)
			}
		}
		// Release what is held, let everything delayed come due, shut down,
		// and compare the whole remaining order.
		for _, k := range held {
			a.Done(k)
			b.Done(k)
		}
		time.Sleep(time.Hour)
		clock.Step(time.Hour)
		synctest.Wait()
		a.ShutDown()
		b.ShutDown()
		for i := 0; ; i++ {
			ka, sa := a.Get()
			kb, sb := b.Get()
			if ka != kb || sa != sb {
				fail(-1, "final Get %d = %q %v, client-go %q %v", i, ka, sa, kb, sb)
			}
			if sa {
				break
			}
			a.Done(ka)
			b.Done(kb)
		}
	})
}
