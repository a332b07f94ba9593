package supervisor

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/probe"
	"github.com/supervise-dev/supervise/proc"
)

// What crosses an upgrade in place, at the supervisor's level: handOver
// does what the exec does between two binaries.

// handOver freezes h's supervisor and starts another on its state, as
// the new binary does: the state goes through JSON, the runtime and the
// clock are the same. The old supervisor is abandoned frozen, as the exec
// abandons it (its workers wait on the gate for ever; its probes are
// stopped, and its exit watcher reads a channel the runtime no longer
// sends on). The returned harness runs the new one.
func (h *harness) handOver() *harness {
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
	h.abandoned = true
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

	n := h.handOver()
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
