// Package conformance holds supervise's timing core against client-go's, in
// a module of its own so the product's go.mod never requires client-go.
//
//   - TestCrashMatchesFlowcontrol: backoff.Crash against
//     flowcontrol.Backoff (and Decide against the kubelet's use of it).
//   - TestRateLimitersMatchClientGo: the exponential, bucket and default
//     controller limiters against client-go's.
//   - TestQueueMatchesClientGo: the work queue against client-go's
//     rate-limited queue, every Get compared, ties included.
//   - TestScheduleMatchesRobfigCron: package schedule's cron parser and
//     next times against robfig/cron's, over random expressions.
//
// All are thousands of seeded random sequences on fake time (FakeClocks, and
// testing/synctest where client-go reads time.Now). The benchmarks compare
// the queues side by side; for one table with the ratios run
//
//	go test -run TestSideBySide -sidebyside -v
package conformance
