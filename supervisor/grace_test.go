package supervisor

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
)

// waitExec waits (bounded, real time) until cmd has been run. A passing
// probe changes nothing the supervisor would announce, so this polls.
func (f *fakeRuntime) waitExec(t *testing.T, cmd string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !slices.Contains(f.hookLog(), cmd); {
		if time.Now().After(deadline) {
			t.Fatalf("%s never ran; ran: %v", cmd, f.hookLog())
		}
		time.Sleep(time.Millisecond)
	}
}

// lastExitAt is when name's last run ended, as the supervisor recorded it.
func (h *harness) lastExitAt(name string) time.Time {
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	if e := h.sup.instances[name].lastExit; e != nil {
		return e.FinishedAt
	}
	return time.Time{}
}

// pre_stop's time comes out of the grace, as the kubelet counts it, but
// the stop signal always gets min_stop_grace before SIGKILL: with
// stop_timeout 3s and a pre_stop that takes 2.5s, the kill comes at 4.5s,
// not at 3s; with min_stop_grace 0 it comes at 3s.
func TestPreStopCountsInsideTheGraceWithAFloor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		floor  time.Duration
		killAt time.Duration
	}{
		{"floor 2s", 2 * time.Second, 4500 * time.Millisecond},
		{"no floor", 0, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			web := program("web", func(p *config.Program) {
				p.StopTimeout = 3 * time.Second
				p.MinStopGrace = tc.floor
				p.Hooks.PreStop = &config.Hook{Command: []string{"drain"}, Timeout: 10 * time.Second}
			})
			h := newHarnessSetup(t, func(rt *fakeRuntime) {
				rt.ignoreTerm = map[string]bool{"web": true}
				rt.execTakes = map[string]time.Duration{"drain": 2500 * time.Millisecond}
			}, web)
			h.waitState("web", Running)
			began := h.clock.Now()
			done := make(chan error, 1)
			go func() { done <- h.sup.Stop(context.Background(), []string{"web"}, ctl.StopOptions{}) }()
			// The hook steps the clock itself; then the kill's timer is armed.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := h.clock.WaitForWaiterAt(ctx, began.Add(tc.killAt)); err != nil {
				t.Fatalf("no timer armed at +%v: %v; now +%v", tc.killAt, err, h.clock.Now().Sub(began))
			}
			h.clock.Step(began.Add(tc.killAt).Sub(h.clock.Now()))
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if at := h.lastExitAt("web"); at.Sub(began) != tc.killAt {
				t.Fatalf("killed %v after the stop began, want %v", at.Sub(began), tc.killAt)
			}
		})
	}
}

// A liveness probe's termination_grace_period replaces stop_timeout for
// the stop it causes, as the kubelet's probe-level
// terminationGracePeriodSeconds.
func TestProbeTerminationGracePeriod(t *testing.T) {
	web := program("web", func(p *config.Program) {
		p.StopTimeout = 30 * time.Second
		p.Probes.Liveness = commandProbe("web-live", 1)
		p.Probes.Liveness.TerminationGracePeriod = 4 * time.Second
	})
	h := newHarnessSetup(t, func(rt *fakeRuntime) {
		rt.ignoreTerm = map[string]bool{"web": true}
		rt.execFailN["web-live"] = 1
	}, web)
	// The first probe runs at the start (no initial delay) and fails.
	h.stepUntil("the liveness kill begins", time.Second, func() bool { return h.sup.instances["web"].state == Stopping })
	began := h.clock.Now()
	h.stepWhenArmed(4 * time.Second)
	h.waitFor("the liveness kill", func() bool { return h.sup.instances["web"].lastExit != nil })
	if at := h.lastExitAt("web"); at.Sub(began) != 4*time.Second {
		t.Fatalf("killed %v after the liveness stop began, want 4s", h.lastExitAt("web").Sub(began))
	}
}

// A post_start that fails kills the process, and its pre_stop runs first,
// as the kubelet's killContainer runs preStop whatever the reason.
func TestFailedPostStartRunsPreStop(t *testing.T) {
	web := program("web", func(p *config.Program) {
		p.Hooks.PostStart = &config.Hook{Command: []string{"warm-up"}, Timeout: time.Second}
		p.Hooks.PreStop = &config.Hook{Command: []string{"drain"}, Timeout: time.Second}
	})
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.execFail["warm-up"] = true }, web)
	h.waitFor("the failed start", func() bool {
		e := h.sup.instances["web"].lastExit
		return e != nil && e.Reason == ReasonHookError
	})
	log := h.rt.hookLog()
	if len(log) < 2 || log[0] != "warm-up" || log[1] != "drain" {
		t.Fatalf("hooks ran %v; want warm-up then drain", log)
	}
}

// initial_delay counts from the process start, post_start included: a
// post_start that took the whole delay leaves the first probe due at once.
func TestInitialDelayCountsFromTheProcessStart(t *testing.T) {
	web := program("web", func(p *config.Program) {
		p.Hooks.PostStart = &config.Hook{Command: []string{"warm-up"}, Timeout: time.Minute}
		p.Probes.Liveness = commandProbe("web-live", 3)
		p.Probes.Liveness.InitialDelay = 5 * time.Second
	})
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.execTakes = map[string]time.Duration{"warm-up": 5 * time.Second} }, web)
	h.waitState("web", Running)
	h.rt.waitExec(t, "web-live") // without a step of the clock
}

// While the supervisor is younger than a probe's period, the probe's first
// run waits a random fraction of the period; later starts do not wait.
func TestFirstProbeSpreadAfterBoot(t *testing.T) {
	web := program("web", func(p *config.Program) {
		p.Autostart = false
		p.Probes.Liveness = commandProbe("web-live", 3)
		p.Probes.Liveness.Period = 10 * time.Second
	})
	h := newHarness(t, web)
	h.sup.mu.Lock()
	h.sup.cfg.Supervisor.ProbeJitter = true
	h.sup.randFloat = func() float64 { return 0.75 }
	h.sup.mu.Unlock()

	start := func() time.Time {
		t.Helper()
		if err := h.sup.Start(context.Background(), []string{"web"}, ctl.WaitOptions{}); err != nil {
			t.Fatal(err)
		}
		h.waitState("web", Running)
		return h.clock.Now()
	}
	began := start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.clock.WaitForWaiterAt(ctx, began.Add(7500*time.Millisecond)); err != nil {
		t.Fatalf("no first probe armed at +7.5s (0.75 of the period): %v", err)
	}
	if slices.Contains(h.rt.hookLog(), "web-live") {
		t.Fatal("probed before its spread")
	}
	if err := h.sup.Stop(context.Background(), []string{"web"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(10 * time.Second) // the supervisor is now a period old
	start()
	h.rt.waitExec(t, "web-live") // at once
}

// eventsOf returns the recorded state changes, oldest first.
func (h *harness) eventsOf(t *testing.T) []ctl.Event {
	t.Helper()
	ch, err := h.sup.Events(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	var out []ctl.Event
	for ev := range ch {
		out = append(out, ev)
	}
	return out
}

// A program's instances are restarted one at a time: each successor is
// ready before the next instance stops.
func TestRollingRestart(t *testing.T) {
	web := program("web", func(p *config.Program) { p.Instances = 3 })
	h := newHarness(t, web)
	for _, k := range []string{"web:0", "web:1", "web:2"} {
		h.waitState(k, Running)
	}
	n := len(h.eventsOf(t))
	if err := h.sup.Restart(context.Background(), []string{"web"}, ctl.RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, ev := range h.eventsOf(t)[n:] {
		if ev.To == string(Stopping) || ev.To == string(Running) && ev.From == string(Starting) {
			order = append(order, ev.Program+" "+ev.To)
		}
	}
	want := []string{"web:0 Stopping", "web:0 Running", "web:1 Stopping", "web:1 Running", "web:2 Stopping", "web:2 Running"}
	if !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

// A successor that does not come back stops the rollout: the error names
// it, and the instances after it keep their processes.
func TestRollingRestartStopsAtAFailedSuccessor(t *testing.T) {
	web := program("web", func(p *config.Program) { p.Instances = 3 })
	h := newHarness(t, web)
	for _, k := range []string{"web:0", "web:1", "web:2"} {
		h.waitState(k, Running)
	}
	h.sup.mu.Lock()
	old1, old2 := h.sup.instances["web:1"].procID, h.sup.instances["web:2"].procID
	h.sup.mu.Unlock()
	h.rt.mu.Lock()
	h.rt.failStart["web"] = 2 // web:0's next start fails, and its retry
	h.rt.mu.Unlock()
	err := h.sup.Restart(context.Background(), []string{"web"}, ctl.RestartOptions{})
	if err == nil || !strings.Contains(err.Error(), "web:0 did not come back ready: CrashLoopBackOff") ||
		!strings.Contains(err.Error(), "web:1, web:2 keep their old processes") {
		t.Fatalf("err = %v", err)
	}
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	if h.sup.instances["web:1"].procID != old1 || h.sup.instances["web:2"].procID != old2 {
		t.Error("instances after the failed one were restarted")
	}
}

// --all-at-once restarts them together, as before: both are stopping at
// once (they ignore SIGTERM, so each waits for its stop timeout).
func TestRestartAllAtOnce(t *testing.T) {
	web := program("web", func(p *config.Program) { p.Instances = 2 })
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.ignoreTerm = map[string]bool{"web": true} }, web)
	h.waitState("web:0", Running)
	h.waitState("web:1", Running)
	done := make(chan error, 1)
	go func() {
		done <- h.sup.Restart(context.Background(), []string{"web"}, ctl.RestartOptions{AllAtOnce: true})
	}()
	h.waitFor("both stopping together", func() bool {
		return h.sup.instances["web:0"].state == Stopping && h.sup.instances["web:1"].state == Stopping
	})
	h.rt.mu.Lock()
	h.rt.ignoreTerm["web"] = false // the new processes stop when asked, for the harness's shutdown
	h.rt.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("restart never returned; now: %s", h.sup.statusSummary())
		}
		h.clock.Step(100 * time.Millisecond) // to the stop timeouts (1s)
		time.Sleep(time.Millisecond)
	}
}
