package conformance

import (
	"math/bits"
	"math/rand"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/clock"
	"github.com/supervise-dev/supervise/clock/fakeclock"
	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
)

// limiterPair builds the same limiter both ways. Ours runs on a fake clock
// that the test steps together with the synctest bubble's time, which
// client-go's token bucket reads through time.Now.
type limiterPair struct {
	name   string
	ours   func(c clock.Clock) backoff.RateLimiter[string]
	theirs func() workqueue.TypedRateLimiter[string]
}

func randomLimiter(r *rand.Rand) limiterPair {
	// client-go computes base × 2^n in float64 and, when that is exactly
	// 2^63, converts it to a negative Duration; a base that is not a power
	// of two never lands there.
	base := time.Duration(1 + r.Int63n(int64(time.Second)))
	if bits.OnesCount64(uint64(base)) == 1 {
		base++
	}
	maxD := base * time.Duration(1+r.Intn(1<<12))
	if r.Intn(4) == 0 {
		maxD = time.Duration(1<<63 - 1)
	}
	qps := 0.5 + r.Float64()*50
	burst := r.Intn(20)
	switch r.Intn(3) {
	case 0:
		return limiterPair{"exponential",
			func(clock.Clock) backoff.RateLimiter[string] { return backoff.NewItemExponential[string](base, maxD) },
			func() workqueue.TypedRateLimiter[string] {
				return workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, maxD)
			}}
	case 1:
		return limiterPair{"bucket",
			func(c clock.Clock) backoff.RateLimiter[string] { return backoff.NewBucket[string](qps, burst, c) },
			func() workqueue.TypedRateLimiter[string] {
				return &workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(qps), burst)}
			}}
	default:
		return limiterPair{"default controller",
			func(c clock.Clock) backoff.RateLimiter[string] {
				return backoff.DefaultControllerRateLimiter[string](c)
			},
			func() workqueue.TypedRateLimiter[string] {
				return workqueue.DefaultTypedControllerRateLimiter[string]()
			}}
	}
}

// TestRateLimitersMatchClientGo compares When, NumRequeues and Forget over
// seeded random sequences.
func TestRateLimitersMatchClientGo(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	delayed := 0 // non-zero delays compared: the sequences must reach the throttled paths
	for seed := range n {
		ok := t.Run(strconv.Itoa(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := rand.New(rand.NewSource(int64(seed)))
				p := randomLimiter(r)
				clock := fakeclock.New(time.Now())
				ours, theirs := p.ours(clock), p.theirs()
				keys := []string{"a", "b", "c", "d"}
				for op := range 50 + r.Intn(150) {
					k := keys[r.Intn(len(keys))]
					switch r.Intn(8) {
					case 0:
						ours.Forget(k)
						theirs.Forget(k)
					case 1:
						d := time.Duration(r.Int63n(int64(500 * time.Millisecond)))
						time.Sleep(d)
						clock.Step(d)
					default:
						a, b := ours.When(k), theirs.When(k)
						if a != b {
							t.Fatalf("%s op %d: When(%s) = %v, client-go %v", p.name, op, k, a, b)
						}
						if a > 0 && p.name == "bucket" {
							delayed++
						}
					}
					if a, b := ours.NumRequeues(k), theirs.NumRequeues(k); a != b {
						t.Fatalf("%s op %d: NumRequeues(%s) = %d, client-go %d", p.name, op, k, a, b)
					}
				}
			})
		})
		if !ok {
			return
		}
	}
	if delayed == 0 {
		t.Fatal("no bucket ever delayed: the sequences do not exercise the token bucket")
	}
	t.Logf("%d non-zero token-bucket delays compared", delayed)
}
