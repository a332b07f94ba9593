package supervisor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
)

// setExecFail makes the fake runtime fail (or pass) every Exec of cmd.
func (f *fakeRuntime) setExecFail(cmd string, fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execFail[cmd] = fail
}

// stepUntil steps the fake clock one period at a time until cond holds
// (read under the supervisor's lock), bounded in real time. Probe timers
// are re-armed asynchronously, so a step may find one not armed yet: it
// then fires a period later, which only delays the reaction.
func (h *harness) stepUntil(what string, period time.Duration, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		err := h.sup.waitFor(ctx, cond)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: never happened; now: %s", what, h.sup.statusSummary())
		}
		h.clock.Step(period)
	}
}

func commandProbe(cmd string, failures int) *config.Probe {
	return &config.Probe{Command: []string{cmd}, Period: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: failures}
}

// A dependent waits for its dependency's readiness (state Waiting), not
// for it to run; a failing liveness probe restarts the program as a crash
// (reason LivenessProbeFailed), on the kubelet's backoff: at once the
// first time, after 10 s the second; readiness alone never restarts.
func TestReadinessGatesAndLivenessRestartsWithBackoff(t *testing.T) {
	db := program("db", func(p *config.Program) {
		p.Probes.Readiness = commandProbe("db-ready", 1)
		p.Probes.Liveness = commandProbe("db-live", 2)
	})
	app := program("app", func(p *config.Program) { p.DependsOn = []string{"db"} })
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.execFail["db-ready"] = true }, db, app)

	h.waitState("db", Running)
	h.waitState("app", Waiting)
	start := h.clock.Now()
	for h.clock.Since(start) < 30*time.Second { // readiness failing for 30 s: no restart, app waits
		h.clock.Step(time.Second)
	}
	h.sup.mu.Lock()
	dbIn, appState := h.sup.instances["db"], h.sup.instances["app"].state
	restarts, ready := len(h.rt.startTimes("db")), dbIn.ready
	h.sup.mu.Unlock()
	if appState != Waiting || ready || restarts != 1 {
		t.Fatalf("after 30 s unready: app %s, db ready %v, db starts %d; want Waiting, false, 1", appState, ready, restarts)
	}

	h.rt.setExecFail("db-ready", false)
	h.stepUntil("db ready", time.Second, func() bool { return h.sup.instances["db"].ready })
	h.waitState("app", Running)

	// Liveness fails: the first kill is restarted at once, the second
	// waits 10 s in CrashLoopBackOff.
	h.rt.setExecFail("db-live", true)
	first := h.sup.instances["db"].procID
	h.stepUntil("first liveness kill", time.Second, func() bool {
		in := h.sup.instances["db"]
		return in.procID != first && in.lastExit != nil && in.lastExit.Reason == ReasonLivenessProbeFailed
	})
	h.waitState("db", Running)
	if got := len(h.rt.startTimes("db")); got != 2 {
		t.Fatalf("db started %d times after the first liveness failure, want 2", got)
	}
	h.stepUntil("second liveness kill", time.Second, func() bool { return h.sup.instances["db"].state == CrashLoopBackOff })
	st, _ := h.sup.Status(context.Background(), []string{"db"})
	if got := time.Duration(st[0].NextStartInMs) * time.Millisecond; got != 10*time.Second || st[0].LastExit == nil || st[0].LastExit.Reason != ReasonLivenessProbeFailed {
		t.Fatalf("after the second liveness failure: next start in %v, last exit %+v; want 10s, LivenessProbeFailed", got, st[0].LastExit)
	}
	h.rt.setExecFail("db-live", false)
	killedAt := h.clock.Now()
	// Step a second at a time: the queue arms only its earliest timer, and
	// the stop's grace deadline may come first.
	h.stepUntil("db restarted", time.Second, func() bool { return h.sup.instances["db"].state == Running })
	starts := h.rt.startTimes("db")
	if len(starts) != 3 || starts[2].Sub(killedAt) != 10*time.Second {
		t.Fatalf("db starts %v, want a third 10s after %v", starts, killedAt)
	}
}

// depends_on = { migrate = "completed" } waits for the one-shot to exit
// successfully; while it fails, the dependent stays Waiting (saying for
// what) instead of starting or crash-looping.
func TestDependsOnCompleted(t *testing.T) {
	oneShot := func(p *config.Program) { p.Restart = config.RestartOnFailure }
	migrate := program("migrate", oneShot)
	api := program("api", func(p *config.Program) {
		p.DependsOn = []string{"migrate"}
		p.DependsOnCond = map[string]string{"migrate": config.DependCompleted}
	})
	h := newHarness(t, migrate, api)
	h.waitState("migrate", Running)
	h.waitState("api", Waiting)

	h.exit("migrate", 1) // fails: restarted at once (first crash), api still waits
	h.waitState("migrate", Running)
	h.exit("migrate", 1)
	h.waitState("migrate", CrashLoopBackOff)
	h.sup.mu.Lock()
	in := h.sup.instances["api"]
	state, msg, starts := in.state, in.message, len(h.rt.startTimes("api"))
	h.sup.mu.Unlock()
	if state != Waiting || msg != "waiting for migrate to complete" || starts != 0 {
		t.Fatalf("api while migrate fails: %s %q, %d starts; want Waiting \"waiting for migrate to complete\", 0", state, msg, starts)
	}
	h.stepWhenArmed(10 * time.Second)
	h.waitState("migrate", Running)
	h.exit("migrate", 0)
	h.waitState("migrate", Completed)
	h.waitState("api", Running)
}

func (f *fakeRuntime) sandboxCounts(name string) (created, resets, live int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := range f.sandboxes {
		if strings.HasSuffix(id, "-"+name) {
			live++
		}
	}
	return f.created[name], f.resets, live
}

// A crashing program with namespaces keeps its sandbox across restarts
// (reset, not recreated); one without gets a fresh one each run; a reload
// that changes the sandbox replaces it, and a stop deletes it.
func TestSandboxKeptAcrossRestarts(t *testing.T) {
	ns := func(p *config.Program) {
		p.Sandbox.Namespaces = []string{"pid", "mount"}
		p.Backoff.Initial = 0
	}
	plain := func(p *config.Program) { p.Backoff.Initial = 0 }
	h := newHarness(t, program("ns", ns), program("plain", plain))
	h.waitState("ns", Running)
	h.waitState("plain", Running)
	for range 3 {
		h.exit("ns", 1)
		h.waitState("ns", Running)
		h.exit("plain", 1)
		h.waitState("plain", Running)
	}
	if created, resets, live := h.rt.sandboxCounts("ns"); created != 1 || resets != 3 || live != 1 {
		t.Errorf("ns: %d sandboxes created, %d resets, %d live; want 1, 3, 1", created, resets, live)
	}
	if created, _, live := h.rt.sandboxCounts("plain"); created != 4 || live != 1 {
		t.Errorf("plain: %d sandboxes created, %d live; want 4, 1", created, live)
	}

	// A reload that changes the sandbox: a new one, the old one deleted.
	cfg := &config.Config{File: "test.toml", Supervisor: config.Supervisor{Workers: 2}, Programs: []*config.Program{
		program("ns", ns, func(p *config.Program) { p.Sandbox.PidsMax = 64 }),
		program("plain", plain),
	}}
	if err := h.sup.ApplyConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.sup.waitFor(ctx, func() bool {
		return len(h.rt.startTimes("ns")) == 5 && h.sup.instances["ns"].state == Running
	}); err != nil {
		t.Fatalf("reload not applied: %s", h.sup.statusSummary())
	}
	if created, _, live := h.rt.sandboxCounts("ns"); created != 2 || live != 1 {
		t.Errorf("after the reload: %d sandboxes created, %d live; want 2, 1", created, live)
	}
	if err := h.sup.Stop(context.Background(), []string{"ns"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("ns", Stopped)
	if _, _, live := h.rt.sandboxCounts("ns"); live != 0 {
		t.Errorf("stopped, %d sandboxes left", live)
	}
}

// TestFailedStartKeepsSandboxItCouldNotDelete: out of descriptors, a start
// fails and so does deleting its sandbox; the sandbox must not be forgotten
// (its cgroup would stay forever): the next start takes it, and the stop
// deletes it.
func TestFailedStartKeepsSandboxItCouldNotDelete(t *testing.T) {
	plain := func(p *config.Program) { p.Backoff.Initial = 0 }
	h := newHarnessSetup(t, func(rt *fakeRuntime) {
		rt.failStart["plain"] = 1
		rt.failDelete = 1
	}, program("plain", plain))
	h.waitState("plain", Running)
	if _, _, live := h.rt.sandboxCounts("plain"); live != 1 {
		t.Errorf("running after a failed start: %d sandboxes live, want 1", live)
	}
	if err := h.sup.Stop(context.Background(), []string{"plain"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("plain", Stopped)
	if _, _, live := h.rt.sandboxCounts("plain"); live != 0 {
		t.Errorf("stopped, %d sandboxes left", live)
	}
}

// A run ended for its health failed whatever its exit code: a program that
// traps SIGTERM and exits 0 after a failed liveness probe is restarted under
// on-failure, and under never it is Failed, so a dependent waiting for it
// to complete never starts. A startup probe's kill has its own reason.
func TestHealthKillIsAFailureWhateverTheCode(t *testing.T) {
	t.Run("liveness, on-failure", func(t *testing.T) {
		job := program("job", func(p *config.Program) {
			p.Restart = config.RestartOnFailure
			p.Probes.Liveness = commandProbe("job-live", 1)
		})
		h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.termExit0["job"] = true }, job)
		h.waitState("job", Running)
		first := h.sup.instances["job"].procID
		h.rt.mu.Lock()
		h.rt.execFailN["job-live"] = 1 // the next run's probes pass
		h.rt.mu.Unlock()
		h.stepUntil("liveness kill", time.Second, func() bool {
			in := h.sup.instances["job"]
			return in.procID != "" && in.procID != first && in.lastExit != nil // the successor runs
		})
		h.sup.mu.Lock()
		last, restarts := *h.sup.instances["job"].lastExit, h.sup.instances["job"].restarts
		h.sup.mu.Unlock()
		if last.Code != 0 || last.Reason != ReasonLivenessProbeFailed || restarts != 1 {
			t.Fatalf("after the kill: exit %+v, restarts %d; want code 0, LivenessProbeFailed, 1 restart", last, restarts)
		}
		h.waitState("job", Running)
	})
	t.Run("startup, never", func(t *testing.T) {
		job := program("job", func(p *config.Program) {
			p.Restart = config.RestartNever
			p.Probes.Startup = commandProbe("job-started", 2)
		})
		after := program("after", func(p *config.Program) {
			p.DependsOn = []string{"job"}
			p.DependsOnCond = map[string]string{"job": config.DependCompleted}
		})
		h := newHarnessSetup(t, func(rt *fakeRuntime) {
			rt.termExit0["job"] = true
			rt.execFail["job-started"] = true
		}, job, after)
		h.waitState("job", Running)
		h.stepUntil("startup kill", time.Second, func() bool { return h.sup.instances["job"].state == Failed })
		h.sup.mu.Lock()
		last := *h.sup.instances["job"].lastExit
		afterState, afterStarts := h.sup.instances["after"].state, len(h.rt.startTimes("after"))
		h.sup.mu.Unlock()
		if last.Code != 0 || last.Reason != ReasonStartupProbeFailed || last.status() != 1 {
			t.Fatalf("after the kill: exit %+v (status %d); want code 0, StartupProbeFailed, status 1", last, last.status())
		}
		if afterState == Running || afterState == Completed || afterStarts != 0 {
			t.Fatalf("the dependent of a killed job: %s, %d starts; want it never started", afterState, afterStarts)
		}
	})
}

// restart_rules come before the policy, as the kubelet's container restart
// rules: under restart = "never", exit 42 is restarted and exit 1 is not;
// a NotIn rule restarts everything but its codes, a signal matching as
// 128+N.
func TestRestartRules(t *testing.T) {
	in42 := config.RestartRule{Action: config.RuleRestart, Operator: config.RuleIn, Values: []int{42}}
	notIn0 := config.RestartRule{Action: config.RuleRestart, Operator: config.RuleNotIn, Values: []int{0, 143}}
	job := program("job", func(p *config.Program) {
		p.Restart = config.RestartNever
		p.RestartRules = []config.RestartRule{in42}
	})
	h := newHarness(t, job)
	h.waitState("job", Running)
	h.exit("job", 42)
	h.waitState("job", Running) // restarted by the rule, at once (first crash)
	h.exit("job", 1)
	h.waitState("job", Failed) // no rule matches; the policy says never

	for _, tc := range []struct {
		e    exitInfo
		want bool
	}{
		{exitInfo{Code: 0}, false},
		{exitInfo{Code: 3}, true},
		{exitInfo{Code: -1, Signal: 15}, false}, // 143
		{exitInfo{Code: -1, Signal: 9}, true},   // 137
	} {
		p := program("x", func(p *config.Program) {
			p.Restart = config.RestartNever
			p.RestartRules = []config.RestartRule{notIn0}
		})
		if got := restartWanted(p, &tc.e, tc.e.failed(p)); got != tc.want {
			t.Errorf("NotIn [0 143], exit %+v: restart %v, want %v", tc.e, got, tc.want)
		}
	}
}
