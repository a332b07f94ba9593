package supervisor

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

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
