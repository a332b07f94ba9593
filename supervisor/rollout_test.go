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

// replacements lists, from the events after the n-th, each instance going
// to Stopping and each new process reaching Running, in order.
func (h *harness) replacements(t *testing.T, n int) []string {
	t.Helper()
	var order []string
	for _, ev := range h.eventsOf(t)[n:] {
		if ev.To == string(Stopping) || ev.To == string(Running) && ev.From == string(Starting) {
			order = append(order, ev.Program+" "+ev.To)
		}
	}
	return order
}

func (h *harness) procIDs(keys ...string) []string {
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = h.sup.instances[k].procID
	}
	return ids
}

// allReplaced waits until every key has a running process other than the
// one in before.
func (h *harness) allReplaced(keys, before []string) {
	h.t.Helper()
	h.waitFor("every instance replaced", func() bool {
		for i, k := range keys {
			in := h.sup.instances[k]
			if in.procID == "" || in.procID == before[i] || in.state != Running {
				return false
			}
		}
		return true
	})
}

var web4 = []string{"web:0", "web:1", "web:2", "web:3"}

// max_unavailable = 2 replaces two at a time: the second batch begins only
// once both successors of the first are running.
func TestRolloutInBatches(t *testing.T) {
	web := program("web", func(p *config.Program) {
		p.Instances = 4
		p.Rollout = config.Rollout{MaxUnavailable: 2}
	})
	h := newHarness(t, web)
	for _, k := range web4 {
		h.waitState(k, Running)
	}
	n := len(h.eventsOf(t))
	if err := h.sup.Restart(context.Background(), []string{"web"}, ctl.RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	order := h.replacements(t, n)
	pos := func(s string) int { return slices.Index(order, s) }
	for _, second := range []string{"web:2 Stopping", "web:3 Stopping"} {
		for _, first := range []string{"web:0 Running", "web:1 Running"} {
			if pos(second) < pos(first) {
				t.Fatalf("%s before %s: %v", second, first, order)
			}
		}
	}
	if pos("web:1 Stopping") > pos("web:0 Running") {
		t.Fatalf("the first batch was not replaced together: %v", order)
	}
}

// A reload that gives a program with several instances a new process,
// and a file change that restarts it, roll them one at a time, as a
// restart does.
func TestReloadAndFileChangeRollInstances(t *testing.T) {
	for _, tt := range []struct {
		name    string
		trigger func(h *harness)
	}{
		{"reload", func(h *harness) {
			h.apply(program("web", func(p *config.Program) {
				p.Instances = 3
				p.Env = map[string]string{"VERSION": "2"}
			}))
		}},
		{"file change", func(h *harness) { h.sup.filesChanged("web", config.Watch{}, []string{"main.go"}) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, program("web", func(p *config.Program) { p.Instances = 3 }))
			keys := web4[:3]
			for _, k := range keys {
				h.waitState(k, Running)
			}
			before := h.procIDs(keys...)
			n := len(h.eventsOf(t))
			tt.trigger(h)
			h.allReplaced(keys, before)
			want := []string{"web:0 Stopping", "web:0 Running", "web:1 Stopping", "web:1 Running", "web:2 Stopping", "web:2 Running"}
			if order := h.replacements(t, n); !slices.Equal(order, want) {
				t.Fatalf("order %v, want %v", order, want)
			}
		})
	}
}

// A rolling restart of a dependency leaves even a dependent bound to it
// (restart_with) running: one of its instances serves throughout.
// Replaced all at once, it stops that dependent first and brings it back.
func TestRollingRestartKeepsDependents(t *testing.T) {
	web := program("web", func(p *config.Program) { p.Instances = 2 })
	worker := program("worker", func(p *config.Program) {
		p.DependsOn = []string{"web"}
		p.BoundTo = map[string]bool{"web": true}
	})
	h := newHarness(t, web, worker)
	h.waitState("web:0", Running)
	h.waitState("web:1", Running)
	h.waitState("worker", Running)
	w := h.procID("worker")
	if err := h.sup.Restart(context.Background(), []string{"web"}, ctl.RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := h.procID("worker"); got != w {
		t.Fatalf("worker was restarted by a rolling restart of web (%s → %s)", w, got)
	}
	if err := h.sup.Restart(context.Background(), []string{"web"}, ctl.RestartOptions{AllAtOnce: true}); err != nil {
		t.Fatal(err)
	}
	h.waitState("worker", Running)
	if got := h.procID("worker"); got == w {
		t.Fatal("worker kept its process through an all-at-once restart of web")
	}
}

// A newer rollout of the same program takes over: the older one ends,
// saying so, and the newer one replaces every instance.
func TestNewerRolloutSupersedes(t *testing.T) {
	web := program("web", func(p *config.Program) { p.Instances = 3 })
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.ignoreTerm = map[string]bool{"web": true} }, web)
	keys := web4[:3]
	for _, k := range keys {
		h.waitState(k, Running)
	}
	first := make(chan error, 1)
	go func() { first <- h.sup.Restart(context.Background(), []string{"web"}, ctl.RestartOptions{}) }()
	h.waitFor("web:0 stopping", func() bool { return h.sup.instances["web:0"].state == Stopping })
	h.rt.mu.Lock()
	h.rt.ignoreTerm["web"] = false
	h.rt.mu.Unlock()
	before := h.procIDs(keys...)
	second := make(chan error, 1)
	go func() { second <- h.sup.Restart(context.Background(), []string{"web"}, ctl.RestartOptions{}) }()
	// web:0's grace (1s) is on the fake clock.
	h.stepUntil("the first rollout ends", 100*time.Millisecond, func() bool { return len(first) == 1 })
	if err := <-first; err == nil || !strings.Contains(err.Error(), "superseded") {
		t.Fatalf("first rollout: %v, want superseded", err)
	}
	h.stepUntil("the second rollout ends", 100*time.Millisecond, func() bool { return len(second) == 1 })
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	for i, id := range h.procIDs(keys...) {
		if keys[i] != "web:0" && id == before[i] {
			t.Errorf("%s kept its process", keys[i])
		}
	}
}

// A successor that runs but is not ready within the rollout's timeout
// stops the rollout on the fake clock: the error says so and names the
// instances left on their old processes.
func TestRolloutStopsAtTheTimeout(t *testing.T) {
	web := program("web", func(p *config.Program) {
		p.Instances = 3
		p.Probes.Readiness = commandProbe("web-ready", 1)
		p.Rollout = config.Rollout{Timeout: 5 * time.Second}
	})
	h := newHarness(t, web)
	keys := web4[:3]
	h.stepUntil("all ready", time.Second, func() bool {
		for _, k := range keys {
			if !h.sup.instances[k].ready {
				return false
			}
		}
		return true
	})
	before := h.procIDs(keys...)
	h.rt.setExecFail("web-ready", true) // no successor becomes ready
	done := make(chan error, 1)
	go func() { done <- h.sup.Restart(context.Background(), []string{"web"}, ctl.RestartOptions{}) }()
	h.stepUntil("the rollout gives up", time.Second, func() bool { return len(done) == 1 })
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "web:0 not ready within 5s") ||
		!strings.Contains(err.Error(), "web:1, web:2 keep their old processes") {
		t.Fatalf("err = %v", err)
	}
	if after := h.procIDs(keys...); after[1] != before[1] || after[2] != before[2] || after[0] == before[0] {
		t.Fatalf("processes %v → %v: want only web:0 replaced", before, after)
	}
}
