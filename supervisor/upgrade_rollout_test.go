package supervisor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
)

// Rolling restarts that no client waits for cross an upgrade in place.

// rollingWeb runs web, 3 instances behind a readiness probe that first
// runs delay after a start, all ready.
func rollingWeb(t *testing.T, delay time.Duration, more ...*config.Program) *harness {
	web := program("web", func(p *config.Program) {
		p.Instances = 3
		p.Probes.Readiness = commandProbe("web-ready", 1)
		p.Probes.Readiness.InitialDelay = delay
	})
	h := newHarness(t, append([]*config.Program{web}, more...)...)
	h.stepUntil("every web ready", time.Second, func() bool {
		for _, k := range []string{"web:0", "web:1", "web:2"} {
			if in := h.sup.instances[k]; in == nil || in.state != Running || !in.ready {
				return false
			}
		}
		return true
	})
	return h
}

// A restart --no-wait's or a file change's rollout, its first successor
// not ready at the upgrade: the new binary waits for it, then replaces
// the other two, each once, one at a time.
func TestUpgradeFinishesANoWaitRollout(t *testing.T) {
	for name, begin := range map[string]func(*testing.T, *harness){
		"restart --no-wait": func(t *testing.T, h *harness) {
			if err := h.sup.Restart(context.Background(), []string{"web"}, ctl.RestartOptions{NoWait: true}); err != nil {
				t.Fatal(err)
			}
		},
		"file change": func(t *testing.T, h *harness) { h.sup.filesChanged("web", config.Watch{}, []string{"main.go"}) },
	} {
		t.Run(name, func(t *testing.T) {
			h := rollingWeb(t, 0)
			h.rt.setExecFail("web-ready", true)
			begin(t, h)
			h.stepUntil("web:0 replaced", time.Second, func() bool { return len(h.rt.startTimes("web")) == 4 })
			n := h.handOver(nil)
			n.sup.mu.Lock()
			inflight := 0
			for _, in := range n.sup.instances {
				if in.restartRequested || in.procID != "" && !in.ready {
					inflight++
				}
			}
			n.sup.mu.Unlock()
			if inflight != 1 {
				t.Fatalf("%d instances down after the take-over, want 1: %s", inflight, n.sup.statusSummary())
			}
			n.stepUntil("web:1 asked while web:0 is not ready", time.Second, func() bool { return true })
			if got := len(n.rt.startTimes("web")); got != 4 {
				t.Fatalf("web started %d times while its first successor was not ready, want 4", got)
			}
			n.rt.setExecFail("web-ready", false)
			n.stepUntil("web:1 and web:2 replaced and ready", time.Second, func() bool {
				return len(n.rt.startTimes("web")) == 6 && n.sup.instances["web:2"].ready && n.sup.rollouts["web"] == nil
			})
			for range 3 { // a second replacement would come within a probe period or so
				n.clock.Step(time.Second)
			}
			if got := len(n.rt.startTimes("web")); got != 6 {
				t.Fatalf("web started %d times, want 6 (3 and one successor each)", got)
			}
		})
	}
}

// A restart its client resumes after an upgrade only waits for what a
// carried rollout of the same program has replaced already. (Each
// successor is ready 5 s after its start, so the test holds the rollout
// where it wants it by not stepping the clock.)
func TestResumedRestartLeavesACarriedRolloutsInstances(t *testing.T) {
	h := rollingWeb(t, 5*time.Second)
	old0 := h.procOf("web:0")
	if err := h.sup.Restart(context.Background(), []string{"web"}, ctl.RestartOptions{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.sup.waitFor(ctx, func() bool { return len(h.rt.startTimes("web")) == 4 }); err != nil {
		t.Fatalf("web:0 not replaced: %s", h.sup.statusSummary())
	}
	n := h.handOver(nil)
	n.stepUntil("the carried rollout at web:1", 100*time.Millisecond, func() bool { return len(n.rt.startTimes("web")) >= 5 })
	if got := len(n.rt.startTimes("web")); got != 5 {
		t.Fatalf("web started %d times, want 5 (web:1's successor is not ready for seconds)", got)
	}
	// The client's resume; its own wait for each instance is the only one
	// ending 7 minutes from now, which says it has begun.
	at := n.clock.Now().Add(7 * time.Minute)
	done := make(chan error, 1)
	go func() {
		done <- n.sup.Restart(context.Background(), []string{"web:0", "web:1", "web:2"},
			ctl.RestartOptions{Timeout: 7 * time.Minute, Resume: map[string]string{"web:0": old0}})
	}()
	for deadline := time.Now().Add(10 * time.Second); !n.clock.HasWaiterAt(at); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the resumed restart never waited: %s", n.sup.statusSummary())
		}
	}
	var err error
	n.stepUntil("the resumed restart done", time.Second, func() bool {
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	})
	if err != nil {
		t.Fatalf("resumed restart: %v", err)
	}
	for range 7 { // a second replacement would be ready within its delay
		n.clock.Step(time.Second)
	}
	if got := len(n.rt.startTimes("web")); got != 6 {
		t.Fatalf("web started %d times, want 6 (3 and one successor each)", got)
	}
}

// The carried rollouts are checked as the input they are.
func TestUpgradeRefusesABadCarriedRollout(t *testing.T) {
	h := rollingWeb(t, 0, program("db"))
	ok := RolloutHandover{Program: "web", Pending: []string{"web:1", "web:2"}, InFlight: map[string]string{"web:0": "p"}, Timeout: time.Minute}
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	if err := h.sup.checkRolloutsLocked([]RolloutHandover{ok}); err != nil {
		t.Fatalf("a good rollout refused: %v", err)
	}
	bad := map[string]RolloutHandover{
		"unknown program":   {Program: "nope", Pending: []string{"web:1"}, Timeout: time.Minute},
		"another's":         {Program: "web", Pending: []string{"db"}, Timeout: time.Minute},
		"not an instance":   {Program: "web", Pending: []string{"web:7"}, Timeout: time.Minute},
		"twice":             {Program: "web", Pending: []string{"web:1", "web:1"}, Timeout: time.Minute},
		"pending in flight": {Program: "web", Pending: []string{"web:0"}, InFlight: map[string]string{"web:0": "p"}, Timeout: time.Minute},
		"no timeout":        {Program: "web", Pending: []string{"web:1"}},
		"endless timeout":   {Program: "web", Pending: []string{"web:1"}, Timeout: 1 << 62},
	}
	for name, r := range bad {
		if err := h.sup.checkRolloutsLocked([]RolloutHandover{r}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := h.sup.checkRolloutsLocked([]RolloutHandover{ok, ok}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a program's rollout twice: %v", err)
	}
	many := make([]RolloutHandover, 3)
	if err := h.sup.checkRolloutsLocked(many); err == nil {
		t.Error("more rollouts than programs accepted")
	}
}

// endRestartForUpgrade runs a waiting restart of web and ends it, as the
// server ends the commands under way for an upgrade, once web:0's
// successor runs (not ready: its probe waits 5 s of the clock).
func endRestartForUpgrade(t *testing.T, h *harness) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.sup.Restart(ctx, []string{"web"}, ctl.RestartOptions{}) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := h.sup.waitFor(wctx, func() bool { return len(h.rt.startTimes("web")) == 4 }); err != nil {
		t.Fatalf("web:0 not replaced: %s", h.sup.statusSummary())
	}
	cancel(ctl.ErrUpgrading)
	var ui *ctl.UpgradeInterrupted
	if err := <-done; !errors.As(err, &ui) || len(ui.Restart.Asked) != 1 || len(ui.Restart.Remaining) != 2 {
		t.Fatalf("restart ended by the upgrade: %v, want web:0 asked and 2 remaining", err)
	}
}

// A waiting restart ended for an upgrade whose client never comes back
// (it was killed meanwhile): the new binary finishes its rollout.
func TestUpgradeFinishesARestartWhoseClientLeft(t *testing.T) {
	h := rollingWeb(t, 5*time.Second)
	endRestartForUpgrade(t, h)
	n := h.handOver(nil)
	n.stepUntil("web:1 and web:2 replaced and ready", time.Second, func() bool {
		return len(n.rt.startTimes("web")) == 6 && n.sup.instances["web:2"].ready && n.sup.rollouts["web"] == nil
	})
	for range 7 {
		n.clock.Step(time.Second)
	}
	if got := len(n.rt.startTimes("web")); got != 6 {
		t.Fatalf("web started %d times, want 6 (3 and one successor each)", got)
	}
}

// A waiting restart's rollout left for an exec that does not happen is
// dropped: its client resumes it, and a later upgrade must not replay it.
func TestThawDropsAnEndedRestartsRollout(t *testing.T) {
	h := rollingWeb(t, 5*time.Second)
	endRestartForUpgrade(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fr, err := h.sup.Freeze(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fr.State.Rollouts) != 1 || len(fr.State.Rollouts[0].Pending) != 2 || len(fr.State.Rollouts[0].InFlight) != 1 {
		t.Fatalf("hand-over rollouts %+v, want web's with 2 pending and 1 in flight", fr.State.Rollouts)
	}
	fr.Thaw()
	h.sup.mu.Lock()
	left := len(h.sup.rollouts)
	h.sup.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d rollouts registered after the thaw, want none", left)
	}
}
