package supervisor

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
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
			go func() { done <- h.sup.Stop(context.Background(), []string{"web"}) }()
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
		if err := h.sup.Start(context.Background(), []string{"web"}); err != nil {
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
	if err := h.sup.Stop(context.Background(), []string{"web"}); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(10 * time.Second) // the supervisor is now a period old
	start()
	h.rt.waitExec(t, "web-live") // at once
}
