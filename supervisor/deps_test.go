package supervisor

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
)

// stackOf is db ← web ← nginx, and a worker on db that asked to be left
// alone (restart_with = false).
func stackOf() []*config.Program {
	return []*config.Program{
		program("db"),
		program("web", func(p *config.Program) { p.DependsOn = []string{"db"} }),
		program("nginx", func(p *config.Program) { p.DependsOn = []string{"web"} }),
		program("worker", func(p *config.Program) {
			p.DependsOn = []string{"db"}
			p.NoRestartWith = map[string]bool{"db": true}
		}),
	}
}

// stoppedOrder lists the programs in the order they reached Stopped.
func (h *harness) stoppedOrder() []string {
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	h.sup.events.mu.Lock()
	defer h.sup.events.mu.Unlock()
	var order []string
	for _, ev := range h.sup.events.historyLocked() {
		if ev.To == string(Stopped) {
			order = append(order, ev.Program)
		}
	}
	return order
}

func (h *harness) procID(key string) string {
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	return h.sup.instances[key].procID
}

// Stopping a program first stops what depends on it, deepest first, and
// starting it again brings them back once it runs; a dependent with
// restart_with = false is left running throughout.
func TestStopStopsBoundDependentsFirst(t *testing.T) {
	h := newHarness(t, stackOf()...)
	for _, n := range []string{"db", "web", "nginx", "worker"} {
		h.waitState(n, Running)
	}
	worker := h.procID("worker")
	if err := h.sup.Stop(context.Background(), []string{"db"}); err != nil {
		t.Fatal(err)
	}
	if got, want := h.stoppedOrder(), []string{"nginx", "web", "db"}; !slices.Equal(got, want) {
		t.Fatalf("stopped in the order %v, want %v", got, want)
	}
	if h.procID("worker") != worker {
		t.Fatal("worker (restart_with = false) was stopped with db")
	}
	if err := h.sup.Start(context.Background(), []string{"db"}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("web", Running)
	h.waitState("nginx", Running)
	if h.procID("worker") != worker {
		t.Fatal("worker was restarted")
	}
	// An operator's own stop of a dependent is not undone by its dependency.
	if err := h.sup.Stop(context.Background(), []string{"nginx"}); err != nil {
		t.Fatal(err)
	}
	if err := h.sup.Restart(context.Background(), []string{"db"}, ctl.RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("web", Running)
	h.sup.mu.Lock()
	nginx := h.sup.instances["nginx"].state
	h.sup.mu.Unlock()
	if nginx != Stopped {
		t.Fatalf("nginx, stopped by the operator, is %s after db's restart", nginx)
	}
}

// A program's end for good stops what is bound to it; they run again when
// it is started.
func TestFinalExitStopsBoundDependents(t *testing.T) {
	progs := stackOf()
	progs[0].Restart = config.RestartNever
	h := newHarness(t, progs...)
	for _, n := range []string{"db", "web", "nginx", "worker"} {
		h.waitState(n, Running)
	}
	h.exit("db", 1)
	h.waitState("db", Failed)
	h.waitState("web", Stopped)
	h.waitState("nginx", Stopped)
	h.waitState("worker", Running)
	if err := h.sup.Start(context.Background(), []string{"db"}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("web", Running)
	h.waitState("nginx", Running)
}

// A sidecar, as the kubelet's: its dependents wait for it to start (its
// startup probe), not to be ready; once the one-shot job that uses it
// completes, the supervisor is done and stops the sidecar, exiting with
// the job's status.
func TestSidecar(t *testing.T) {
	proxy := program("proxy", func(p *config.Program) {
		p.Sidecar = true
		p.Probes.Startup = commandProbe("proxy-started", 1)
		p.Probes.Readiness = commandProbe("proxy-ready", 1)
	})
	job := program("job", func(p *config.Program) {
		p.Restart = config.RestartOnFailure
		p.DependsOn = []string{"proxy"}
	})
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.execFail["proxy-ready"] = true }, proxy, job)
	h.waitState("proxy", Running)
	h.stepUntil("job started once the proxy's startup probe passed", time.Second, func() bool {
		return h.sup.instances["job"].state == Running
	})
	h.sup.mu.Lock()
	proxyReady := h.sup.instances["proxy"].ready
	h.sup.mu.Unlock()
	if proxyReady {
		t.Fatal("the proxy is ready; the test needs it started and not ready")
	}
	h.exit("job", 0)
	select {
	case code := <-h.code:
		h.code <- code
		if code != 0 {
			t.Fatalf("exit code %d, want 0 (the job's)", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("supervise kept running after the job completed; now: %s", h.sup.statusSummary())
	}
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	if st := h.sup.instances["proxy"].state; st != Stopped {
		t.Fatalf("proxy %s after the end, want Stopped", st)
	}
}
