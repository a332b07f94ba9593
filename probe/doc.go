// Package probe runs the kubelet's three probes — startup, readiness,
// liveness — against one run of a program, each a command (inside the
// program's sandbox, through the runtime's Exec), an HTTP GET or a TCP
// connect.
//
// The contract, the kubelet's:
//
//   - A Runner belongs to one process run: Start it once the process runs,
//     Stop it when the process exits. It never restarts anything itself; it
//     reports, through OnChange and Status, and the supervisor acts.
//   - The startup probe gates the other two: they do not run until it
//     passed once. Without a startup probe the program counts as started at
//     once. A startup probe failing FailureThreshold times in a row is a
//     liveness failure.
//   - Readiness changes only Ready: SuccessThreshold successes in a row make
//     the program ready, FailureThreshold failures in a row make it not
//     ready. Without a readiness probe a started program is ready.
//   - Liveness failing FailureThreshold times in a row sets LivenessFailed,
//     reports it once, and ends the Runner's probing: the supervisor restarts
//     the program (reason LivenessProbeFailed, or StartupProbeFailed when
//     the startup probe failed; a failure whatever the exit code).
//   - Every probe waits InitialDelay from the process start, then runs every
//     Period, scheduled from when it was due (a probe that overran skips the
//     periods it missed); each has Timeout, counted from when it runs (a
//     probe due during post_start, or woken late, gets all of it), on the
//     same clock. Readiness and liveness run at once when the startup
//     probe passes, if their initial delay is over.
//   - Defaults: period 10s, timeout 1s, success threshold 1, failure
//     threshold 3, no initial delay. Success thresholds of startup and
//     liveness probes must be 1.
//   - HTTP probes: GET, no keep-alives, no proxy, redirects not followed,
//     TLS certificates not verified (as the kubelet); 2xx and 3xx succeed,
//     or exactly ExpectStatus when set.
//   - Probe timers are the only timers: each probe's goroutine sleeps on the
//     injected clock.Clock until it is due; nothing polls.
package probe
