package supervisor

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/probe"
	"github.com/supervise-dev/supervise/proc"
)

// What crosses an upgrade in place, at the supervisor's level: handOver
// does what the exec does between two binaries.

// handOver freezes h's supervisor and starts another on its state, as
// the new binary does: the state goes through JSON, the runtime and the
// clock are the same. The old supervisor is abandoned frozen, as the exec
// abandons it (its workers wait on the gate; its probes are stopped, and
// its exit watcher reads a channel the runtime no longer
// sends on) until the test ends; then it ends without touching what it
// handed over. during, when set, runs between the two, as the time the
// exec takes. The returned harness runs the new one.
func (h *harness) handOver(during func()) *harness {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fr, err := h.sup.Freeze(ctx)
	if err != nil {
		h.t.Fatalf("Freeze: %v", err)
	}
	h.sup.mu.Lock()
	for _, in := range h.sup.instances {
		in.health.stopWatching()
	}
	h.sup.mu.Unlock()
	h.rt.mu.Lock()
	h.rt.events = make(chan proc.ExitEvent, 1024)
	h.rt.mu.Unlock()
	if during != nil {
		during()
	}
	data, err := json.Marshal(&fr.State)
	if err != nil {
		h.t.Fatal(err)
	}
	var st Handover
	if err := json.Unmarshal(data, &st); err != nil {
		h.t.Fatal(err)
	}
	files := map[int]*os.File{}
	for _, f := range fr.Files {
		fd, err := rawFD(f)
		if err != nil {
			h.t.Fatal(err)
		}
		files[fd] = f
	}
	sup, err := New(Options{Config: st.Config, Runtime: h.rt, Clock: h.clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Console: io.Discard,
		Adopt: &st, AdoptFiles: files})
	if err != nil {
		h.t.Fatalf("New on the hand-over: %v", err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	n := &harness{t: h.t, clock: h.clock, rt: h.rt, sup: sup, stop: stop, code: make(chan int, 1)}
	go func() { n.code <- sup.Run(runCtx) }()
	h.t.Cleanup(func() {
		stop()
		select {
		case <-n.code:
		case <-time.After(10 * time.Second):
			h.t.Error("the new supervisor's Run did not return after cancel")
		}
	})
	h.release = func() {
		// The processes are the new supervisor's (gone by now): the old
		// one forgets them, and ends without a stop or a start.
		h.sup.mu.Lock()
		h.sup.shuttingDown = true
		for _, in := range h.sup.instances {
			in.health.stop()
			in.health = nil
			in.goal, in.state, in.procID, in.startingID, in.sandboxID = goalStop, Stopped, "", "", ""
			if in.job != nil {
				in.job.stop()
			}
		}
		h.sup.mu.Unlock()
		h.sup.cancel() // what it had under way (a rollout) ends
		fr.Thaw()
	}
	return n
}

// probeStep steps the clock by one probe period and waits (bounded, real
// time) until each of kinds' probe of the keys has a result of the new
// time: every probe runs exactly once more.
func (h *harness) probeStep(period time.Duration, probes map[string]string) {
	h.t.Helper()
	h.clock.Step(period)
	now := h.clock.Now()
	ran := func() bool {
		h.sup.mu.Lock()
		defer h.sup.mu.Unlock()
		for key, kind := range probes {
			in := h.sup.instances[key]
			if in == nil || in.health == nil || in.health.probes == nil {
				return false
			}
			if r, ok := in.health.probes.Status().Last[kind]; !ok || r.Time.Before(now) {
				return false
			}
		}
		return true
	}
	// A result changes no state, so nothing wakes a waiter: look until
	// it is there (the deadline only bounds a hang).
	for deadline := time.Now().Add(10 * time.Second); !ran(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Fatalf("the probes %v did not run at %v: %s", probes, now, h.sup.statusSummary())
		}
	}
}

// A run's probe counts cross an upgrade: two liveness failures of three
// before it, one after kills; a ready program stays ready through it and
// through a readiness failure after it that its failure_threshold allows.
func TestUpgradeKeepsProbeCounts(t *testing.T) {
	live := program("live", func(p *config.Program) { p.Probes.Liveness = commandProbe("live-check", 3) })
	ready := program("ready", func(p *config.Program) { p.Probes.Readiness = commandProbe("ready-check", 3) })
	h := newHarness(t, live, ready)
	h.waitState("live", Running)
	h.waitState("ready", Running)
	h.stepUntil("ready ready", time.Second, func() bool { return h.sup.instances["ready"].ready })
	both := map[string]string{"live": probe.Liveness, "ready": probe.Readiness}

	h.rt.setExecFail("live-check", true)
	h.probeStep(time.Second, both) // live: 1 failure
	h.rt.setExecFail("ready-check", true)
	h.probeStep(time.Second, both) // live: 2 failures; ready: 1

	n := h.handOver(nil)
	n.sup.mu.Lock()
	wasReady := n.sup.instances["ready"].ready
	n.sup.mu.Unlock()
	if !wasReady {
		t.Fatal("ready is not ready right after the take-over")
	}
	n.probeStep(time.Second, both) // live: 3 failures; ready: 2
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.sup.waitFor(ctx, func() bool {
		in := n.sup.instances["live"]
		return in.lastExit != nil && in.lastExit.Reason == ReasonLivenessProbeFailed
	}); err != nil {
		t.Fatalf("live was not killed at its third liveness failure, one after the upgrade: %s", n.sup.statusSummary())
	}
	n.sup.mu.Lock()
	stillReady := n.sup.instances["ready"].ready
	n.sup.mu.Unlock()
	if !stillReady {
		t.Fatal("ready is not ready after its second readiness failure of three, the first after the upgrade")
	}
	n.probeStep(time.Second, map[string]string{"ready": probe.Readiness}) // ready: 3
	if err := n.sup.waitFor(ctx, func() bool { return !n.sup.instances["ready"].ready }); err != nil {
		t.Fatalf("ready still ready after three readiness failures: %s", n.sup.statusSummary())
	}
}

// A job's times cross an upgrade: the time that came while the exec ran
// runs (once) after it, status shows the last run as before, and the
// next times follow.
func TestUpgradeKeepsJobTimes(t *testing.T) {
	h := newHarness(t, job("job", "*/30 * * * * *"))
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.exit("job", 0)
	h.waitState("job", Completed)
	h.clock.Step(29 * time.Second) // 59 s: the next time is at 60 s
	n := h.handOver(func() { h.clock.Step(2 * time.Second) })
	// (The run of 60 s may have begun already: its start is the last
	// one, the end and result still the last run's.)
	if st := n.statusOf("job"); st.LastRun == nil || st.LastRun.Result != "succeeded" || !st.LastRun.FinishedAt.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("after the upgrade, status says the last run was %+v, want the success of 30s", st.LastRun)
	}
	n.waitState("job", Running) // the time of 60 s, come during the exec
	n.wantStarts("job", 30*time.Second, 61*time.Second)
	n.exit("job", 0)
	n.waitState("job", Completed)
	n.stepWhenArmed(29 * time.Second) // 90 s
	n.waitState("job", Running)
	n.wantStarts("job", 30*time.Second, 61*time.Second, 90*time.Second)
	if st := n.statusOf("job"); st.NextRun == nil || !st.NextRun.Equal(t0.Add(120*time.Second)) {
		t.Fatalf("next run %v, want 120s", st.NextRun)
	}
}

// A run under way keeps its max_runtime, counted from its start, not
// from the upgrade.
func TestUpgradeKeepsAJobsMaxRuntime(t *testing.T) {
	h := newHarness(t, job("job", "*/30 * * * * *", func(p *config.Program) { p.Schedule.MaxRuntime = 20 * time.Second }))
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.clock.Step(10 * time.Second) // 40 s
	n := h.handOver(nil)
	n.clock.Step(10 * time.Second) // 50 s: 20 s since its start
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.sup.waitFor(ctx, func() bool {
		in := n.sup.instances["job"]
		return in.lastExit != nil && in.lastExit.Reason == ReasonMaxRuntime
	}); err != nil {
		t.Fatalf("the run was not stopped at its max_runtime: %s", n.sup.statusSummary())
	}
	if st := n.statusOf("job"); st.LastRun == nil || !strings.HasPrefix(st.LastRun.Result, "failed: max_runtime") {
		t.Fatalf("last run %+v", st.LastRun)
	}
}

// A run beside the job's instance (concurrency = "allow") is taken over
// too, as the run of its job it is.
func TestUpgradeKeepsARunBeside(t *testing.T) {
	h := newHarness(t, allowJob())
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.stepWhenArmed(30 * time.Second) // 60 s: a run beside the first
	h.waitState("job#1", Running)
	beside := h.procOf("job#1")
	n := h.handOver(nil)
	if got := n.procOf("job#1"); got != beside {
		t.Fatalf("job#1 runs %q after the upgrade, want %q", got, beside)
	}
	n.exitKey("job#1", 0)
	n.waitGone("job#1")
	if st := n.statusOf("job"); st.LastRun == nil || st.LastRun.Result != "succeeded" {
		t.Fatalf("the job's last run %+v, want job#1's success", st.LastRun)
	}
}

// An upgrade in the middle of a rollout a reload began: the instances not
// replaced yet run processes of the spec before the reload. The new
// binary knows them by the spec they were started with, carried, and
// replaces them as the rollout would have.
func TestUpgradeFinishesARolloutOfAReload(t *testing.T) {
	web := func(cmd string) *config.Program {
		return program("web", func(p *config.Program) {
			p.Command = []string{cmd}
			p.Instances = 3
			p.Probes.Readiness = commandProbe("web-ready", 1)
		})
	}
	h := newHarness(t, web("web"))
	for _, k := range []string{"web:0", "web:1", "web:2"} {
		h.waitState(k, Running)
	}
	h.stepUntil("every web ready", time.Second, func() bool {
		return h.sup.instances["web:0"].ready && h.sup.instances["web:1"].ready && h.sup.instances["web:2"].ready
	})
	// The reload: web:0 is replaced first, and its successor is not ready,
	// so the rollout waits there.
	h.rt.setExecFail("web-ready", true)
	if err := h.sup.ApplyConfig(context.Background(), &config.Config{File: "test.toml", Supervisor: h.sup.cfg.Supervisor, Programs: []*config.Program{web("web-v2")}}); err != nil {
		t.Fatal(err)
	}
	h.stepUntil("web:0 replaced", time.Second, func() bool {
		return h.sup.instances["web:0"].state == Running && len(h.rt.startTimes("web-v2")) == 1
	})
	if n := len(h.rt.startTimes("web-v2")); n != 1 {
		t.Fatalf("web-v2 started %d times before the upgrade, want once (the rollout waits for it)", n)
	}
	n := h.handOver(nil)
	n.rt.setExecFail("web-ready", false)
	n.stepUntil("web:1 and web:2 replaced", time.Second, func() bool {
		return len(n.rt.startTimes("web-v2")) == 3 && n.sup.instances["web:1"].state == Running && n.sup.instances["web:2"].state == Running
	})
	if got := len(n.rt.startTimes("web")); got != 3 {
		t.Fatalf("web (the old command) started %d times, want 3 (none after the reload)", got)
	}
}

// A program scaled beyond its config's instances is taken over with all
// of them: the scale crosses before the config's instances are made.
func TestUpgradeKeepsAScaledProgram(t *testing.T) {
	h := newHarness(t, program("web"))
	h.waitState("web", Running)
	if err := h.sup.Scale(context.Background(), map[string]int{"web": 3}, ctl.WaitOptions{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"web:0", "web:1", "web:2"} {
		h.waitState(k, Running)
	}
	h.waitGone("web") // renamed web:0: scaling numbers every instance
	procs := map[string]string{}
	for _, k := range []string{"web:0", "web:1", "web:2"} {
		procs[k] = h.procOf(k)
	}
	n := h.handOver(nil)
	for k, id := range procs {
		if got := n.procOf(k); got != id {
			t.Errorf("%s runs %q after the upgrade, want %q", k, got, id)
		}
	}
}
