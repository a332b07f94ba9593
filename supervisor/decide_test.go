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
		{"ended for good", runView{settled: true}, stepNothing},
		{"exited, the policy says stay down", runView{afterExit: true}, stepSettle},
		{"exited, the policy says stay down, restart asked", runView{afterExit: true, restartRequested: true}, stepStart},
		{"exited during the shutdown", runView{afterExit: true, policyRestart: true, shuttingDown: true}, stepSettle},
		{"exited, the policy says stay down, dependency unmet", runView{afterExit: true, unmetDep: "db"}, stepSettle},
		{"ended for good, restart asked", runView{settled: true, restartRequested: true}, stepStart},
		{"shutting down", runView{shuttingDown: true}, stepNothing},
		{"shutting down, restart asked", runView{shuttingDown: true, restartRequested: true}, stepNothing},
		{"dependency unmet", runView{unmetDep: "db"}, stepWaitDependency},
		{"dependency unmet beats the backoff", runView{unmetDep: "db", afterExit: true, policyRestart: true, backoffLeft: time.Second}, stepWaitDependency},
		{"dependency unmet, restart asked", runView{unmetDep: "db", restartRequested: true}, stepWaitDependency},
		{"crashed, in backoff", runView{afterExit: true, policyRestart: true, backoffLeft: 10 * time.Second}, stepBackOff},
		{"crashed, backoff over", runView{afterExit: true, policyRestart: true}, stepStart},
		{"crashed, restart asked skips the backoff", runView{afterExit: true, policyRestart: true, restartRequested: true, backoffLeft: time.Minute}, stepStart},
		{"backoff left but no exit of its own", runView{backoffLeft: time.Minute}, stepStart},
		{"ended for good, start asked", runView{settled: true, startAsked: true}, stepStart},
		{"in backoff, start asked: the backoff still decides", runView{afterExit: true, policyRestart: true, startAsked: true, backoffLeft: time.Second}, stepBackOff},
		{"exited, start asked, backoff waived", runView{afterExit: true, policyRestart: true, startAsked: true, waiveBackoff: true, backoffLeft: time.Second}, stepStart},
		{"exited, the policy says stay down, start asked", runView{afterExit: true, startAsked: true}, stepStart},
	} {
		if got := decideRun(tc.v).step; got != tc.want {
			t.Errorf("%s: %+v → %v, want %v", tc.name, tc.v, got, tc.want)
		}
	}
}

// TestDecideRunInvariants checks every combination of the view against
// what must always hold, whatever the order of the rules.
func TestDecideRunInvariants(t *testing.T) {
	n := 0
	for bits := range 1 << 11 {
		on := func(i int) bool { return bits&(1<<i) != 0 }
		v := runView{
			running: on(0), restartRequested: on(1), startAsked: on(2), waiveBackoff: on(3),
			unhealthy: on(4), settled: on(5), shuttingDown: on(6), afterExit: on(7), policyRestart: on(8),
		}
		if on(9) {
			v.unmetDep = "db"
		}
		if on(10) {
			v.backoffLeft = time.Second
		}
		d := decideRun(v)
		got := d.step
		n++
		check := func(ok bool, rule string) {
			if !ok {
				t.Errorf("%+v → %+v: %s", v, d, rule)
			}
		}
		lifted := v.restartRequested || v.startAsked
		own := v.afterExit && !v.waiveBackoff
		check(!v.running || got == stepNothing || got == stepStopForRestart || got == stepStopUnhealthy,
			"a running process is only ever stopped or left alone")
		check(v.running || (got != stepStopForRestart && got != stepStopUnhealthy),
			"nothing to stop without a process")
		check(got != stepStart || (!v.shuttingDown && v.unmetDep == ""),
			"no start during the shutdown or before the dependencies")
		check(got != stepStart || !v.settled || lifted, "an end for good is lifted only by a restart or a start asked for")
		check(got != stepStart || !own || v.backoffLeft == 0 || v.restartRequested,
			"no start inside the crash backoff unless a restart was asked")
		check(got != stepBackOff || (own && !v.restartRequested && v.backoffLeft > 0), "backoff only after an exit of its own")
		check(got != stepStart || !own || v.policyRestart || lifted,
			"an exit of its own restarts only when its policy or a command asks")
		check(got != stepSettle || (!v.running && own && !lifted && (!v.policyRestart || v.shuttingDown)),
			"an end for good only after an exit of its own that nothing restarts")
		check(v.running || !own || lifted || v.policyRestart && !v.shuttingDown || got == stepSettle,
			"an exit of its own that nothing restarts ends it for good")
		check(d.take == (!v.running && (v.restartRequested || v.startAsked || v.waiveBackoff)),
			"what commands asked is used up exactly when no process runs")
	}
	if n != 2048 {
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
			v := runView{afterExit: true, policyRestart: true, backoffLeft: b.Left("p", exitAt)}
			switch step := decideRun(v).step; step {
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
