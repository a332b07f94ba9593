package backoff_test

import (
	"fmt"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/clock/fakeclock"
)

// A program that crashes as soon as it starts: Decide says how long to wait
// before each restart.
func ExampleCrash_Decide() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := backoff.NewCrash(backoff.CrashConfig{Initial: 10 * time.Second, Max: 5 * time.Minute, Clock: clock})
	for range 8 {
		exited := clock.Now()
		wait := b.Decide("web", exited)
		fmt.Print(wait, " ")
		clock.Step(wait)
		b.Decide("web", exited) // the window has passed: start (and record the step)
	}
	fmt.Println()
	// Output: 0s 10s 20s 40s 1m20s 2m40s 5m0s 5m0s
}

func ExampleDefaultControllerRateLimiter() {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := backoff.DefaultControllerRateLimiter[string](clock)
	for range 5 {
		fmt.Print(r.When("web"), " ")
	}
	fmt.Println(r.NumRequeues("web"))
	// Output: 5ms 10ms 20ms 40ms 80ms 5
}
