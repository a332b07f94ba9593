// Package backoff decides delays. It is pure policy: it knows nothing of
// processes, queues or config, and it never reads time from a global.
//
//   - Clock is where time comes from. RealClock{} is the wall clock;
//     FakeClock moves only when a test calls Step or SetTime, so tests never
//     sleep to wait for a delay.
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
