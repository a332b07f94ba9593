package supervisor

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
)

func (h *harness) keysOf(name string) []string {
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	var keys []string
	for k, in := range h.sup.instances {
		if in.spec.Name == name {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// scale web=3 then web=1: instances 0..2, then 0 only; the surplus ones
// stop highest-numbered first, each with its hooks, and web:0 keeps its
// process throughout.
func TestScaleUpAndDown(t *testing.T) {
	web := program("web", func(p *config.Program) {
		p.Instances = 2
		p.Hooks.PreStop = &config.Hook{Command: []string{"drain"}}
	})
	h := newHarness(t, web)
	h.waitState("web:0", Running)
	h.waitState("web:1", Running)
	first := h.procID("web:0")
	if err := h.sup.Scale(context.Background(), map[string]int{"web": 3}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := h.keysOf("web"); !slices.Equal(got, []string{"web:0", "web:1", "web:2"}) {
		t.Fatalf("after web=3: %v", got)
	}
	h.sup.mu.Lock()
	ready := h.sup.instances["web:2"].ready
	h.sup.mu.Unlock()
	if !ready {
		t.Fatal("scale returned before web:2 was ready")
	}
	if err := h.sup.Scale(context.Background(), map[string]int{"web": 1}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := h.keysOf("web"); !slices.Equal(got, []string{"web:0"}) {
		t.Fatalf("after web=1: %v", got)
	}
	if got := h.rt.hookLogByInstance(); !slices.Equal(got, []string{"drain 2", "drain 1"}) {
		t.Fatalf("pre_stop ran as %v, want web:2's then web:1's", got)
	}
	if h.procID("web:0") != first {
		t.Fatal("web:0 was restarted by scaling")
	}
}

// A program of one instance ("web") scaled up is numbered from then on,
// and scaling it to 0 leaves none; scale names programs only.
func TestScaleSingleAndZero(t *testing.T) {
	h := newHarness(t, program("web"), program("db"))
	h.waitState("web", Running)
	if err := h.sup.Scale(context.Background(), map[string]int{"web": 2}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := h.keysOf("web"); !slices.Equal(got, []string{"web:0", "web:1"}) {
		t.Fatalf("after web=2: %v", got)
	}
	if err := h.sup.Scale(context.Background(), map[string]int{"web": 0, "db": 0}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := append(h.keysOf("web"), h.keysOf("db")...); len(got) != 0 {
		t.Fatalf("after web=0 db=0: %v", got)
	}
	// Still programs: status has no row of them, the snapshot names them.
	if st, err := h.sup.Status(context.Background(), []string{"web"}); err != nil || len(st) != 0 {
		t.Fatalf("status web at 0 instances: %v %v", st, err)
	}
	if snap := h.sup.Snapshot(); !slices.Equal(snap.Empty, []string{"db", "web"}) || len(snap.Programs) != 0 {
		t.Fatalf("snapshot at 0 instances: empty %v, %d instances", snap.Empty, len(snap.Programs))
	}
	if err := h.sup.Start(context.Background(), []string{"web"}, ctl.WaitOptions{}); err == nil || !strings.Contains(err.Error(), "0 instances") {
		t.Fatalf("start web at 0 instances: %v", err)
	}
	err := h.sup.Scale(context.Background(), map[string]int{"nope": 1}, ctl.WaitOptions{})
	if !errors.Is(err, ctl.ErrUnknownProgram) {
		t.Fatalf("scale nope=1: %v", err)
	}
}

// A scale lasts through a reload that leaves the program's instances as
// the file had them, and ends with one that changes them.
func TestScaleLastsUntilTheConfigChangesInstances(t *testing.T) {
	web := func(n int, env string) *config.Program {
		return program("web", func(p *config.Program) {
			p.Instances = n
			p.Env = map[string]string{"V": env}
		})
	}
	h := newHarness(t, web(2, "1"))
	h.waitState("web:1", Running)
	if err := h.sup.Scale(context.Background(), map[string]int{"web": 4}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	h.apply(web(2, "2")) // a new env, the same instances: still 4, rolled
	h.waitFor("4 instances", func() bool { return len(h.sup.instances) == 4 })
	h.sup.mu.Lock()
	scaled := maps.Clone(h.sup.scaled)
	h.sup.mu.Unlock()
	if scaled["web"] != 4 {
		t.Fatalf("scale forgotten by a reload that kept instances: %v", scaled)
	}
	h.apply(web(3, "2"))
	h.waitFor("the file's 3 instances", func() bool {
		n := 0
		for _, in := range h.sup.instances {
			if in.goal != goalRemove {
				n++
			}
		}
		return n == 3 && len(h.sup.scaled) == 0
	})
}

// start returns when the program is ready, not when it runs; a program
// that crash-loops makes it fail, naming it; --no-wait returns at once.
func TestStartWaitsForReady(t *testing.T) {
	web := program("web", func(p *config.Program) {
		p.Autostart = false
		p.Probes.Readiness = commandProbe("web-ready", 1)
	})
	crashy := program("crashy", func(p *config.Program) { p.Autostart = false })
	h := newHarnessSetup(t, func(rt *fakeRuntime) {
		rt.execFail["web-ready"] = true
		rt.failStart["crashy"] = 100
	}, web, crashy)
	done := make(chan error, 1)
	go func() { done <- h.sup.Start(context.Background(), []string{"web"}, ctl.WaitOptions{}) }()
	h.waitState("web", Running)
	h.stepUntil("a few failing probes", time.Second, func() bool { return h.clock.Since(t0) > 5*time.Second })
	if len(done) != 0 {
		t.Fatalf("start returned while web was not ready: %v", <-done)
	}
	h.rt.mu.Lock()
	h.rt.execFail["web-ready"] = false
	h.rt.mu.Unlock()
	h.stepUntil("start returns", time.Second, func() bool { return len(done) == 1 })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	err := h.sup.Start(context.Background(), []string{"crashy"}, ctl.WaitOptions{})
	if err == nil || !strings.Contains(err.Error(), "crashy did not start: CrashLoopBackOff") {
		t.Fatalf("start crashy: %v", err)
	}
	if err := h.sup.Stop(context.Background(), []string{"web"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	h.rt.mu.Lock()
	h.rt.execFail["web-ready"] = true
	h.rt.mu.Unlock()
	if err := h.sup.Start(context.Background(), []string{"web"}, ctl.WaitOptions{NoWait: true}); err != nil {
		t.Fatal(err)
	}
}
