package supervisor

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
)

// While an upgrade has the supervisor frozen the runtime holds its lock
// (proc's until the exec): status does not wait for it (the last cgroup
// figures read stand in), and signal waits for the thaw only as long as
// its context lasts, which the upgrade ends before the exec.
func TestCommandsDoNotBlockOnAFrozenRuntime(t *testing.T) {
	h := newHarness(t, program("web"))
	h.waitState("web", Running)
	if st, err := h.sup.Status(t.Context(), nil); err != nil || len(st) != 1 || st[0].MemoryBytes == 0 {
		t.Fatalf("status before the upgrade: %+v, %v", st, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	fr, err := h.sup.Freeze(ctx)
	if err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	h.rt.mu.Lock() // the runtime frozen too
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			h.rt.mu.Unlock()
			fr.Thaw()
		}
	}
	defer thaw()
	h.clock.Step(time.Minute) // the figures read before are stale

	status := make(chan error, 1)
	go func() {
		st, err := h.sup.Status(context.Background(), nil)
		if err == nil && (len(st) != 1 || st[0].MemoryBytes == 0) {
			err = errors.New("no figures while frozen")
		}
		status <- err
	}()
	select {
	case err := <-status:
		if err != nil {
			t.Errorf("status while frozen: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("status blocked on the frozen runtime")
	}

	sctx, end := context.WithCancelCause(context.Background())
	signal := make(chan error, 1)
	go func() { signal <- h.sup.Signal(sctx, syscall.SIGHUP, []string{"web"}) }()
	end(ctl.ErrUpgrading) // as EndCommandsForUpgrade does
	select {
	case err := <-signal:
		if !errors.Is(err, ctl.ErrUpgrading) {
			t.Errorf("signal ended for the upgrade: %v, want ErrUpgrading", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("signal blocked on the frozen runtime past its context's end")
	}
	if n := len(h.rt.signalled[h.sup.instances["web"].procID]); n != 0 {
		t.Errorf("web got %d signals while frozen", n)
	}

	// After a thaw (the exec failed) a signal goes through.
	thaw()
	if err := h.sup.Signal(t.Context(), syscall.SIGHUP, []string{"web"}); err != nil {
		t.Errorf("signal after the thaw: %v", err)
	}
}

// A freeze that waits for the workers starts nothing new meanwhile: once
// the reconciles under way end, it has them, even though more restart
// intents keep coming (a crash loop with a short backoff, a start). Before,
// every new reconcile could begin while the freeze waited, and with
// programs restarting all the time the workers were never idle at once:
// every upgrade was refused.
func TestFreezeStartsNothingNewWhileItWaits(t *testing.T) {
	blockA, blockB := make(chan struct{}), make(chan struct{})
	h := newHarnessWorkers(t, 2, func(rt *fakeRuntime) {
		rt.blockCreate = map[string]chan struct{}{"a": blockA, "b": blockB}
	}, program("a"), program("b", func(p *config.Program) { p.Autostart = false }))
	defer close(blockB)
	h.waitState("a", Starting) // a worker holds a's start

	type frozen struct {
		fr  *Frozen
		err error
	}
	got := make(chan frozen, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fr, err := h.sup.Freeze(ctx)
		got <- frozen{fr, err}
	}()
	h.waitFreezeWaiting()
	// A new intent while the freeze waits: the other worker is idle, and
	// b's start would hold it (its sandbox blocks) for as long as the test.
	if err := h.sup.Start(bg(t), []string{"b"}, ctl.WaitOptions{NoWait: true}); err != nil {
		t.Fatalf("start b: %v", err)
	}
	h.poll("the idle worker taking b's start", func() bool { return h.sup.queue.Len() == 0 })
	close(blockA) // the one reconcile under way ends
	r := <-got
	if r.err != nil {
		t.Fatalf("Freeze with the reconcile under way ended: %v", r.err)
	}
	r.fr.Thaw()
	blockB <- struct{}{} // b's start, queued behind the freeze, goes on after the thaw
	h.waitState("b", Running)
}

// A program a reload removed whose stop has not begun when a freeze has
// the workers (it waited behind the freeze's closed intake) cannot be
// handed over: the new binary, given the config without it, could not take
// its process back (supervise ended so, the soak found). The freeze lets
// the workers stop it, then freezes without it; before, it refused, and an
// upgrade during a reload's removals failed.
func TestFreezeWaitsForAProgramBeingRemoved(t *testing.T) {
	blockSlow := make(chan struct{})
	h := newHarnessWorkers(t, 2, func(rt *fakeRuntime) {
		rt.blockCreate = map[string]chan struct{}{"slow": blockSlow}
	}, program("gone"), program("slow", func(p *config.Program) { p.Autostart = false }))
	h.waitState("gone", Running)
	if err := h.sup.Start(bg(t), []string{"slow"}, ctl.WaitOptions{NoWait: true}); err != nil {
		t.Fatalf("start slow: %v", err)
	}
	h.waitState("slow", Starting) // a worker holds slow's start

	type frozen struct {
		fr        *Frozen
		err       error
		goneKnown bool // the supervisor still knew gone when Freeze returned
	}
	got := make(chan frozen, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fr, err := h.sup.Freeze(ctx)
		h.sup.mu.Lock()
		known := h.sup.instances["gone"] != nil
		h.sup.mu.Unlock()
		got <- frozen{fr, err, known}
	}()
	h.waitFreezeWaiting()
	h.apply(program("slow", func(p *config.Program) { p.Autostart = false })) // gone is removed; its stop waits
	close(blockSlow)
	r := <-got
	if r.err != nil {
		t.Fatalf("Freeze with a removed program still running: %v, want it to wait for its stop", r.err)
	}
	defer r.fr.Thaw()
	if r.goneKnown {
		t.Error("Freeze returned while the removed program was still known")
	}
	for _, ih := range r.fr.State.Instances {
		if ih.Key == "gone" {
			t.Errorf("the removed program was handed over: %+v", ih)
		}
	}
}

// A freeze that cannot get a moment without a removed program still
// running refuses when its time is up, naming the program.
func TestFreezeRefusesWhenTheRemovalOutlastsIt(t *testing.T) {
	h := newHarnessWorkers(t, 2, func(rt *fakeRuntime) {
		rt.ignoreTerm = map[string]bool{"gone": true} // its stop waits out the grace on the fake clock
	}, program("gone", func(p *config.Program) { p.StopTimeout = time.Hour }), program("kept"))
	h.waitState("gone", Running)
	h.apply(program("kept")) // gone is removed: its stop waits an hour
	h.waitState("gone", Stopping)
	defer h.clock.Step(time.Hour) // the stop ends, for Run to end
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	fr, err := h.sup.Freeze(ctx)
	if err == nil {
		fr.Thaw()
		t.Fatal("Freeze with a stop that outlasts it succeeded")
	}
	if !strings.Contains(err.Error(), "program gone is") {
		t.Errorf("Freeze: %v, want it to name gone", err)
	}
}

// waitFreezeWaiting returns once a Freeze under way holds the intake.
func (h *harness) waitFreezeWaiting() {
	h.t.Helper()
	h.poll("the freeze waiting for the workers", func() bool {
		if h.sup.intake.TryLock() {
			h.sup.intake.Unlock()
			return false
		}
		return true
	})
}

// poll checks cond every few milliseconds (real time) until it holds,
// for a state another goroutine reaches, failing after 10 s.
func (h *harness) poll(what string, cond func() bool) {
	h.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: never", what)
		}
	}
}
