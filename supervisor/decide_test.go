package supervisor

import (
	"slices"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/clock/fakeclock"
)

// TestDecideRun: the restart rule, row by row.
func TestDecideRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    runView
		want runStep
	}{
		{"running, nothing asked", runView{running: true}, stepNothing},
		{"running, restart asked", runView{running: true, restartRequested: true}, stepStopForRestart},
		{"running, restart asked while unhealthy", runView{running: true, restartRequested: true, unhealthy: true}, stepStopForRestart},
		{"running, unhealthy", runView{running: true, unhealthy: true}, stepStopUnhealthy},
		{"running during the shutdown", runView{running: true, shuttingDown: true}, stepNothing},
		{"first start", runView{}, stepStart},
		{"ended for good", runView{settled: true, afterExit: true}, stepNothing},
		{"ended for good, restart asked", runView{settled: true, restartRequested: true}, stepStart},
		{"shutting down", runView{shuttingDown: true}, stepNothing},
		{"shutting down, restart asked", runView{shuttingDown: true, restartRequested: true}, stepNothing},
		{"dependency unmet", runView{unmetDep: "db"}, stepWaitDependency},
		{"dependency unmet beats the backoff", runView{unmetDep: "db", afterExit: true, backoffLeft: time.Second}, stepWaitDependency},
		{"dependency unmet, restart asked", runView{unmetDep: "db", restartRequested: true}, stepWaitDependency},
		{"crashed, in backoff", runView{afterExit: true, backoffLeft: 10 * time.Second}, stepBackOff},
		{"crashed, backoff over", runView{afterExit: true}, stepStart},
		{"crashed, restart asked skips the backoff", runView{afterExit: true, restartRequested: true, backoffLeft: time.Minute}, stepStart},
		{"backoff left but no exit of its own", runView{backoffLeft: time.Minute}, stepStart},
	} {
		if got := decideRun(tc.v); got != tc.want {
			t.Errorf("%s: %+v → %v, want %v", tc.name, tc.v, got, tc.want)
		}
	}
}

// TestDecideRunInvariants checks every combination of the view against
// what must always hold, whatever the order of the rules.
func TestDecideRunInvariants(t *testing.T) {
	bools := []bool{false, true}
	n := 0
	for _, running := range bools {
		for _, restart := range bools {
			for _, unhealthy := range bools {
				for _, settled := range bools {
					for _, shutting := range bools {
						for _, dep := range []string{"", "db"} {
							for _, afterExit := range bools {
								for _, left := range []time.Duration{0, time.Second} {
									v := runView{running: running, restartRequested: restart, unhealthy: unhealthy, settled: settled, shuttingDown: shutting, unmetDep: dep, afterExit: afterExit, backoffLeft: left}
									got := decideRun(v)
									n++
									check := func(ok bool, rule string) {
										if !ok {
											t.Errorf("%+v → %v: %s", v, got, rule)
										}
									}
									check(!running || got == stepNothing || got == stepStopForRestart || got == stepStopUnhealthy,
										"a running process is only ever stopped or left alone")
									check(running || (got != stepStopForRestart && got != stepStopUnhealthy),
										"nothing to stop without a process")
									check(got != stepStart || (!shutting && dep == ""),
										"no start during the shutdown or before the dependencies")
									check(got != stepStart || !settled || restart, "an end for good is lifted only by a restart")
									check(got != stepStart || !afterExit || left == 0 || restart,
										"no start inside the crash backoff unless a restart was asked")
									check(got != stepBackOff || (afterExit && !restart && left > 0), "backoff only after an exit of its own")
								}
							}
						}
					}
				}
			}
		}
	}
	if n != 256 {
		t.Fatalf("checked %d views", n)
	}
}

// TestDecideRunCrashLoop drives the rule through a program that crashes at
// once every time, with the kubelet's defaults: the waits between its starts
// are 0, 10s, 20s … up to 5 min, and a run longer than reset_after forgives.
func TestDecideRunCrashLoop(t *testing.T) {
	clock := fakeclock.New(t0)
	b := backoff.NewCrash(backoff.CrashConfig{Initial: 10 * time.Second, Max: 5 * time.Minute, Clock: clock})
	var waits []time.Duration
	crash := func() {
		exitAt := clock.Now()
		waited := time.Duration(0)
		for {
			v := runView{afterExit: true, backoffLeft: b.Left("p", exitAt)}
			switch step := decideRun(v); step {
			case stepBackOff:
				clock.Step(v.backoffLeft)
				waited += v.backoffLeft
				continue
			case stepStart:
				b.Decide("p", exitAt)
				waits = append(waits, waited)
				return
			default:
				t.Fatalf("crash loop: %v", step)
			}
		}
	}
	for range 9 {
		crash()
	}
	s := time.Second
	if want := []time.Duration{0, 10 * s, 20 * s, 40 * s, 80 * s, 160 * s, 300 * s, 300 * s, 300 * s}; !slices.Equal(waits, want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	// A stable run longer than reset_after (2 × max): the next crash
	// starts again at once, and the one after waits the initial delay.
	clock.Step(10*time.Minute + time.Second)
	waits = nil
	crash()
	crash()
	if want := []time.Duration{0, 10 * s}; !slices.Equal(waits, want) {
		t.Fatalf("after a stable run: waits %v, want %v", waits, want)
	}
}
