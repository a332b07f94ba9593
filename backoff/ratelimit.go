package backoff

import (
	"math"
	"sync"
	"time"

	"github.com/supervise-dev/supervise/clock"
	"golang.org/x/time/rate"
)

// RateLimiter decides how long a work-queue key waits before its next try.
// When records a try and returns its delay; Forget clears the key's history
// (call it once the key succeeded); NumRequeues returns how many tries the
// key has had since the last Forget.
type RateLimiter[T comparable] interface {
	When(item T) time.Duration
	Forget(item T)
	NumRequeues(item T) int
}

// ItemExponential delays each key base × 2^n after its n-th failure since the
// last Forget, capped at max.
type ItemExponential[T comparable] struct {
	base, max time.Duration

	mu       sync.Mutex
	failures map[T]int // guarded by mu
}

// NewItemExponential returns a per-key exponential limiter: base, 2 × base,
// 4 × base … up to max. base must be > 0; a base ≤ 0 gives no delay.
func NewItemExponential[T comparable](base, max time.Duration) *ItemExponential[T] {
	return &ItemExponential[T]{base: base, max: max, failures: map[T]int{}}
}

func (r *ItemExponential[T]) When(item T) time.Duration {
	r.mu.Lock()
	n := r.failures[item]
	r.failures[item] = n + 1
	r.mu.Unlock()
	return exponential(r.base, r.max, n)
}

// exponential returns min(base × 2^n, max) without overflowing: integer
// shifts are exact where client-go's float64 product is, and saturate where
// it would overflow.
func exponential(base, max time.Duration, n int) time.Duration {
	if base <= 0 {
		return 0
	}
	if n >= 63 || base > math.MaxInt64>>n {
		return max
	}
	return min(base<<n, max)
}

func (r *ItemExponential[T]) NumRequeues(item T) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures[item]
}

func (r *ItemExponential[T]) Forget(item T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, item)
}

// Bucket is a token bucket shared by every key: tokens refill at rate per
// second up to burst, and each When takes one, waiting for it if none is left.
// It keeps no per-key state.
type Bucket[T comparable] struct {
	clock clock.Clock
	lim   *rate.Limiter
}

// NewBucket returns a token bucket of r tokens per second and the given
// burst, starting full, on clock (nil: clock.Real{}). With burst 0, When
// returns rate.InfDuration.
func NewBucket[T comparable](r float64, burst int, clk clock.Clock) *Bucket[T] {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Bucket[T]{clock: clk, lim: rate.NewLimiter(rate.Limit(r), burst)}
}

func (b *Bucket[T]) When(T) time.Duration {
	// One reading of the clock for both the reservation and its delay, so the
	// answer depends on the injected clock alone.
	now := b.clock.Now()
	return b.lim.ReserveN(now, 1).DelayFrom(now)
}

func (*Bucket[T]) Forget(T)          {}
func (*Bucket[T]) NumRequeues(T) int { return 0 }

// MaxOf asks every limiter and returns the longest delay.
type MaxOf[T comparable] struct {
	limiters []RateLimiter[T]
}

// NewMaxOf combines limiters: When is the largest of their delays (each
// records the try), NumRequeues the largest count, Forget forgets in all.
func NewMaxOf[T comparable](limiters ...RateLimiter[T]) *MaxOf[T] {
	return &MaxOf[T]{limiters: limiters}
}

func (m *MaxOf[T]) When(item T) time.Duration {
	var d time.Duration
	for _, l := range m.limiters {
		d = max(d, l.When(item))
	}
	return d
}

func (m *MaxOf[T]) NumRequeues(item T) int {
	n := 0
	for _, l := range m.limiters {
		n = max(n, l.NumRequeues(item))
	}
	return n
}

func (m *MaxOf[T]) Forget(item T) {
	for _, l := range m.limiters {
		l.Forget(item)
	}
}

// DefaultControllerRateLimiter is client-go's default for controllers: the
// larger of a per-key exponential from 5 ms to 1000 s and a 10/s, burst-100
// bucket that bounds the overall retry rate. clock drives the bucket (nil:
// clock.Real{}).
func DefaultControllerRateLimiter[T comparable](clk clock.Clock) RateLimiter[T] {
	return NewMaxOf[T](
		NewItemExponential[T](5*time.Millisecond, 1000*time.Second),
		NewBucket[T](10, 100, clk),
	)
}
