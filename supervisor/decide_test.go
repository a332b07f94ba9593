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
		{"in its backoff at the shutdown", runView{afterExit: true, policyRestart: true, shuttingDown: true, backingOff: true, backoffLeft: time.Second}, stepNothing},
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

// invariants are what must hold of decideRun's answer d to view v,
// whatever the order of its rules.
var invariants = []struct {
	rule string
	ok   func(v runView, d runDecision) bool
}{
	{"a running process is only ever stopped or left alone", func(v runView, d runDecision) bool {
		return !v.running || d.step == stepNothing || d.step == stepStopForRestart || d.step == stepStopUnhealthy
	}},
	{"nothing to stop without a process", func(v runView, d runDecision) bool {
		return v.running || (d.step != stepStopForRestart && d.step != stepStopUnhealthy)
	}},
	{"no start during the shutdown or before the dependencies", func(v runView, d runDecision) bool {
		return d.step != stepStart || (!v.shuttingDown && v.unmetDep == "")
	}},
	{"an end for good is lifted only by a restart or a start asked for", func(v runView, d runDecision) bool {
		return d.step != stepStart || !v.settled || lifted(v)
	}},
	{"no start inside the crash backoff unless a restart was asked", func(v runView, d runDecision) bool {
		return d.step != stepStart || !own(v) || v.backoffLeft == 0 || v.restartRequested
	}},
	{"backoff only after an exit of its own", func(v runView, d runDecision) bool {
		return d.step != stepBackOff || (own(v) && !v.restartRequested && v.backoffLeft > 0)
	}},
	{"an exit of its own restarts only when its policy or a command asks", func(v runView, d runDecision) bool {
		return d.step != stepStart || !own(v) || v.policyRestart || lifted(v)
	}},
	{"an end for good only after an exit of its own that nothing restarts", func(v runView, d runDecision) bool {
		return d.step != stepSettle || (!v.running && own(v) && !lifted(v) && (!v.policyRestart || v.shuttingDown && !v.backingOff))
	}},
	{"an exit of its own that nothing restarts ends it for good", func(v runView, d runDecision) bool {
		return v.running || !own(v) || lifted(v) || v.policyRestart && (!v.shuttingDown || v.backingOff) || d.step == stepSettle
	}},
	{"what commands asked is used up exactly when no process runs", func(v runView, d runDecision) bool {
		return d.take == (!v.running && (v.restartRequested || v.startAsked || v.waiveBackoff))
	}},
	{"a job starts only at its time, to retry its run, or on a restart", func(v runView, d runDecision) bool {
		return d.step != stepStart || !v.scheduled || v.slotDue || v.afterExit || v.restartRequested
	}},
}

func lifted(v runView) bool { return v.restartRequested || v.startAsked }
func own(v runView) bool    { return v.afterExit && !v.waiveBackoff }

// TestDecideRunInvariants checks every combination of the view against
// the invariants.
func TestDecideRunInvariants(t *testing.T) {
	for bits := range 1 << 14 {
		on := func(i int) bool { return bits&(1<<i) != 0 }
		v := runView{
			running: on(0), restartRequested: on(1), startAsked: on(2), waiveBackoff: on(3),
			unhealthy: on(4), settled: on(5), shuttingDown: on(6), afterExit: on(7), policyRestart: on(8),
			scheduled: on(11), slotDue: on(12), backingOff: on(13),
		}
		if on(9) {
			v.unmetDep = "db"
		}
		if on(10) {
			v.backoffLeft = time.Second
		}
		d := decideRun(v)
		for _, inv := range invariants {
			if !inv.ok(v, d) {
				t.Errorf("%+v → %+v: %s", v, d, inv.rule)
			}
		}
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
