package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/proc"
)

// waitIdle waits (bounded, real time) until no key is queued or held by a
// worker: whatever the supervisor does on its own is done.
func (h *harness) waitIdle(what string) {
	h.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if st := h.sup.queue.Stats(); st.Depth == 0 && st.Processing == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: the workers never went idle; now: %s", what, h.sup.statusSummary())
		}
		time.Sleep(time.Millisecond)
	}
}

// exitsOf counts key's recorded moves into Exited.
func (h *harness) exitsOf(key string) int {
	n := 0
	for _, ev := range h.eventsOf(h.t) {
		if ev.Program == key && ev.To == string(Exited) {
			n++
		}
	}
	return n
}

// A stop forced by SIGKILL ends like any other: the exit is the one proc
// reports, handled once when it comes, not made up on the spot and the
// report dropped as already handled.
func TestForcedStopExitIsProcsEventHandledOnce(t *testing.T) {
	web := program("web", func(p *config.Program) { p.StopTimeout = 3 * time.Second })
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.ignoreTerm = map[string]bool{"web": true} }, web)
	h.waitState("web", Running)
	id := h.procID("web")

	h.rt.mu.Lock()
	h.rt.holdExits = true // proc reports the exit late
	h.rt.mu.Unlock()
	stopped := make(chan error, 1)
	go func() { stopped <- h.sup.Stop(context.Background(), []string{"web"}, ctl.StopOptions{}) }()
	h.waitState("web", Stopping)
	h.stepWhenArmed(3 * time.Second) // the grace is over: SIGKILL
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if st, err := h.rt.Status(id); err != nil || st.State == proc.StateExited {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never killed; now: %s", h.sup.statusSummary())
		}
	}
	h.waitIdle("after the SIGKILL")
	h.sup.mu.Lock()
	in := h.sup.instances["web"]
	gotID, gotState, gotExit := in.procID, in.state, in.lastExit
	h.sup.mu.Unlock()
	if gotID != id || gotState != Stopping || gotExit != nil {
		t.Fatalf("before proc reported the exit: process %q, state %s, last exit %+v; want %q, Stopping, none (the exit is proc's to report)",
			gotID, gotState, gotExit, id)
	}

	h.rt.releaseExits()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	h.waitState("web", Stopped)
	h.waitIdle("after the exit")
	if n := h.exitsOf("web"); n != 1 {
		t.Fatalf("the forced stop's exit was recorded %d times, want 1", n)
	}
	if e := h.sup.instances["web"].lastExit; e == nil || e.Signal.String() != "killed" {
		t.Fatalf("last exit %+v, want SIGKILL's", e)
	}
}

// A post_start that fails ends its run through the stop path, without
// holding a worker for the grace: with one worker, another program starts
// while the failed one's stop signal is ignored and its grace runs.
func TestFailedPostStartDoesNotHoldAWorker(t *testing.T) {
	a := program("a", func(p *config.Program) {
		p.StopTimeout = 30 * time.Second
		p.Hooks.PostStart = &config.Hook{Command: []string{"warm-up"}, Timeout: time.Second}
	})
	b := program("b")
	h := newHarnessWorkers(t, 1, func(rt *fakeRuntime) {
		rt.execFail["warm-up"] = true
		rt.ignoreTerm = map[string]bool{"a": true}
	}, a, b)
	h.rt.waitExec(t, "warm-up")
	h.waitState("b", Running) // the clock has not moved: a's grace runs still
	// a's failed start went back on the queue behind b: its stop begins
	// when the worker comes to it, and holds no worker.
	h.waitState("a", Stopping)
	h.stepWhenArmed(30 * time.Second) // a's grace is over: SIGKILL
	h.waitFor("a's failed start recorded", func() bool {
		e := h.sup.instances["a"].lastExit
		return e != nil && e.Reason == ReasonHookError
	})
	if e := h.sup.instances["a"].lastExit; e.Code != -1 || e.Message == "" {
		t.Errorf("a's last exit %+v, want the start's failure (code -1, the hook's error)", e)
	}
}
