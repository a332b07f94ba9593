package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
)

func (h *harness) apply(programs ...*config.Program) {
	h.t.Helper()
	cfg := &config.Config{File: "test.toml", Supervisor: config.Supervisor{Workers: 2}, Programs: programs}
	if err := h.sup.ApplyConfig(context.Background(), cfg); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) present(key string) bool {
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	return h.sup.instances[key] != nil
}

// A program removed by a reload is forgotten only once its process is
// gone: one that ignores SIGTERM is killed at the end of its grace, and
// its sandbox is deleted. (The soak found both left behind.)
func TestRemovedProgramIsStoppedBeforeItIsForgotten(t *testing.T) {
	stubborn := func(p *config.Program) { p.StopTimeout = 2 * time.Second }
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.ignoreTerm = map[string]bool{"gone": true} },
		program("keep"), program("gone", stubborn))
	h.waitState("gone", Running)
	h.waitState("keep", Running)

	h.apply(program("keep"))
	h.waitState("gone", Stopping)
	if err := h.sup.Stop(context.Background(), []string{"gone"}, ctl.StopOptions{}); err == nil {
		t.Error("a command reached a program removed from the config")
	}
	if !h.present("gone") {
		t.Fatal("forgotten while its process still runs")
	}
	h.stepWhenArmed(2 * time.Second) // the grace ends: SIGKILL
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.sup.waitFor(ctx, func() bool { return h.sup.instances["gone"] == nil }); err != nil {
		t.Fatalf("never forgotten: %s", h.sup.statusSummary())
	}
	if _, _, live := h.rt.sandboxCounts("gone"); live != 0 {
		t.Errorf("%d sandboxes of the removed program left", live)
	}
	h.rt.mu.Lock()
	for _, p := range h.rt.procs {
		if p.name == "gone" && p.state == "Running" {
			t.Errorf("process %s of the removed program still running", p.id)
		}
	}
	h.rt.mu.Unlock()
}

// Put back while its removal is under way, a program stays and runs again.
func TestProgramPutBackDuringItsRemoval(t *testing.T) {
	stubborn := func(p *config.Program) { p.StopTimeout = 2 * time.Second }
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.ignoreTerm = map[string]bool{"flap": true} },
		program("flap", stubborn))
	h.waitState("flap", Running)
	h.apply()
	h.waitState("flap", Stopping)
	h.apply(program("flap", stubborn))
	h.stepWhenArmed(2 * time.Second)
	h.waitState("flap", Running)
	if got := len(h.rt.startTimes("flap")); got != 2 {
		t.Errorf("flap started %d times, want 2", got)
	}
	// Let the shutdown at cleanup end without stepping the fake clock.
	h.rt.mu.Lock()
	for _, p := range h.rt.procs {
		p.ignoreStop = false
	}
	h.rt.mu.Unlock()
}

// Stopping the last running program by command does not end supervise:
// the user may start it again (as PID 1 it would end the container).
func TestStoppingTheLastProgramKeepsSuperviseUp(t *testing.T) {
	h := newHarness(t, program("web"))
	h.waitState("web", Running)
	if err := h.sup.Stop(context.Background(), []string{"web"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("web", Stopped)
	// The Stopped transition ran checkDoneLocked under the lock: had it
	// decided to end, done would be closed by now.
	select {
	case <-h.sup.done:
		t.Fatal("supervise decided to exit when its last program was stopped")
	default:
	}
	if err := h.sup.Start(context.Background(), []string{"web"}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("web", Running)
}
