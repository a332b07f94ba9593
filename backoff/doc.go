// Package backoff decides delays. It is pure policy: it knows nothing of
// processes, queues or config, and it never reads time from a global.
//
//   - Time comes from a clock.Clock: clock.Real{} in production, a
//     fakeclock.Clock in tests, which moves only when the test says.
//   - Crash is the kubelet's per-key crash backoff (initial, doubling to max,
//     starting over after a quiet reset_after). Decide applies the whole
//     restart rule in one call.
//   - RateLimiter is what the work queue asks for a retry delay:
//     NewItemExponential (per key, doubling), NewBucket (token bucket, shared by
//     all keys), NewMaxOf (the largest of several), and
//     DefaultControllerRateLimiter (client-go's default: 5 ms → 1000 s
//     exponential, max-of a 10/s burst-100 bucket).
//
// Every type here is safe for concurrent use. Nothing here starts a
// goroutine, except the goroutine a FakeClock runs an AfterFunc callback in.
package backoff
