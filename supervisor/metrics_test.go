package supervisor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/metrics"
)

func findProgram(t *testing.T, s metrics.Snapshot, program, instance string) metrics.Program {
	t.Helper()
	for _, p := range s.Programs {
		if p.Program == program && p.Instance == instance {
			return p
		}
	}
	t.Fatalf("no %s:%s in the snapshot", program, instance)
	return metrics.Program{}
}

func TestSnapshot(t *testing.T) {
	h := newHarness(t,
		program("web", func(p *config.Program) { p.Instances = 2 }),
		program("job", func(p *config.Program) { p.Restart = config.RestartNever }),
		program("hog", func(p *config.Program) { p.Backoff.Initial = 0 }),
		program("off", func(p *config.Program) { p.Autostart = false }),
	)
	h.waitState("web:0", Running)
	h.waitState("web:1", Running)
	h.waitState("job", Running)
	h.waitState("hog", Running)
	h.exit("job", 0)
	h.waitState("job", Completed)
	if !h.rt.exitOOM("hog") {
		t.Fatal("hog does not run")
	}
	h.sup.waitFor(context.Background(), func() bool { return h.sup.instances["hog"].restarts == 1 && h.sup.instances["hog"].state == Running })

	s := h.sup.Snapshot()
	if len(s.States) != len(allStates) || s.States[0] != "Stopped" {
		t.Errorf("states %v", s.States)
	}
	if len(s.Programs) != 5 {
		t.Fatalf("%d programs, want 5: %+v", len(s.Programs), s.Programs)
	}
	web1 := findProgram(t, s, "web", "1")
	if web1.State != "Running" || !web1.Ready || !web1.Up || !web1.Autostart || web1.StartedAt.IsZero() || web1.LastExit != nil {
		t.Errorf("web:1 %+v", web1)
	}
	job := findProgram(t, s, "job", "0")
	if job.State != "Completed" || job.Ready || !job.Up || !job.StartedAt.IsZero() || job.LastExit == nil || job.LastExit.Reason != "Completed" {
		t.Errorf("job %+v", job)
	}
	hog := findProgram(t, s, "hog", "0")
	if hog.OOMKills != 1 || hog.Restarts != 1 || hog.LastExit == nil || hog.LastExit.Reason != "OOMKilled" {
		t.Errorf("hog %+v", hog)
	}
	off := findProgram(t, s, "off", "0")
	if off.State != "Stopped" || off.Up || off.Autostart {
		t.Errorf("off %+v", off)
	}
	// Status names each instance as the snapshot does, and says ready
	// with the gauge's meaning, whether or not there is a readiness check.
	st, err := h.sup.Status(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]metrics.Program{}
	for _, p := range s.Programs {
		byName[p.Name] = p
	}
	for _, row := range st {
		p, ok := byName[row.Name]
		if !ok || row.Ready == nil || *row.Ready != p.Ready {
			t.Errorf("status %s: ready %v, snapshot %+v (named %v)", row.Name, row.Ready, p, ok)
		}
	}
	if job.Name != "job" || web1.Name != "web:1" {
		t.Errorf("snapshot names %q and %q, want job and web:1", job.Name, web1.Name)
	}
	if s.Queue.Name == "" || s.Queue.Adds == 0 || s.Queue.WorkTime.Count == 0 || len(s.Queue.WorkTime.Bounds)+1 != len(s.Queue.WorkTime.Counts) {
		t.Errorf("queue %+v", s.Queue)
	}

	// A reload applied, one refused (the file does not exist).
	h.sup.mu.Lock()
	cfg := h.sup.cfg
	h.sup.mu.Unlock()
	if err := h.sup.ApplyConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if err := h.sup.Reload(context.Background()); err == nil {
		t.Fatal("reloading a missing file worked")
	}
	if s := h.sup.Snapshot(); s.Reloads != 1 || s.ReloadFailures != 1 {
		t.Errorf("reloads %d failed %d, want 1 1", s.Reloads, s.ReloadFailures)
	}
}

func TestHealthyLockHeld(t *testing.T) {
	h := newHarness(t, program("web"))
	h.waitState("web", Running)
	if err := h.sup.Healthy(); err != nil {
		t.Fatalf("healthy supervisor: %v", err)
	}
	h.sup.mu.Lock()
	res := make(chan error, 2)
	go func() { res <- h.sup.Healthy() }()
	go func() { res <- h.sup.Healthy() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Both callers must have armed their timers before the step, or the
	// late one waits for a deadline the clock has passed.
	if err := h.clock.WaitForWaitersAt(ctx, h.clock.Now().Add(lockBound), 2); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(lockBound)
	for range 2 {
		if err := <-res; err == nil || !strings.Contains(err.Error(), "lock") {
			t.Errorf("lock held: %v", err)
		}
	}
	h.sup.mu.Unlock()
	if err := h.sup.Healthy(); err != nil {
		t.Errorf("lock free again: %v", err)
	}
}

func TestHealthyWorkerStuck(t *testing.T) {
	gate := make(chan struct{})
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.blockCreate = map[string]chan struct{}{"slow": gate} },
		program("slow", func(p *config.Program) {
			p.Hooks.PreStart = &config.Hook{Command: []string{"true"}, Timeout: 30 * time.Second}
		}))
	defer close(gate)
	h.waitState("slow", Starting)
	// Held for the slack plus the hooks' 30s: still healthy.
	h.clock.Step(stuckSlack + 30*time.Second)
	if err := h.sup.Healthy(); err != nil {
		t.Fatalf("within the bound: %v", err)
	}
	h.clock.Step(time.Second)
	if err := h.sup.Healthy(); err == nil || !strings.Contains(err.Error(), "a worker has held one program for 1m31s") {
		t.Fatalf("past the bound: %v", err)
	}
}
