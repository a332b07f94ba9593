package supervisor

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
)

// stackOf is db ← web ← nginx, each bound to its dependency
// (restart_with = true), and a worker on db that is not.
func stackOf() []*config.Program {
	return []*config.Program{
		program("db"),
		program("web", func(p *config.Program) {
			p.DependsOn = []string{"db"}
			p.BoundTo = map[string]bool{"db": true}
		}),
		program("nginx", func(p *config.Program) {
			p.DependsOn = []string{"web"}
			p.BoundTo = map[string]bool{"web": true}
		}),
		program("worker", func(p *config.Program) { p.DependsOn = []string{"db"} }),
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

// Stopping a program first stops what restart_with binds to it, deepest
// first, and starting it again brings them back once it runs; a dependent
// not bound is left running throughout.
func TestStopStopsBoundDependentsFirst(t *testing.T) {
	h := newHarness(t, stackOf()...)
	h.running("db", "web", "nginx")
	worker := h.running("worker")
	n := len(h.eventsOf(t))
	if err := h.sup.Stop(context.Background(), []string{"db"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := h.stoppedOrder(), []string{"nginx", "web", "db"}; !slices.Equal(got, want) {
		t.Fatalf("stopped in the order %v, want %v", got, want)
	}
	if err := h.sup.Start(context.Background(), []string{"db"}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("web", Running)
	h.waitState("nginx", Running)
	h.untouched(n, worker)
	// An operator's own stop of a dependent is not undone by its dependency.
	if err := h.sup.Stop(context.Background(), []string{"nginx"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	web := h.procID("web")
	if err := h.sup.Restart(context.Background(), []string{"db"}, ctl.RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("web", Running)
	if h.procID("web") == web {
		t.Fatal("web, bound to db, was not restarted with it")
	}
	h.sup.mu.Lock()
	nginx := h.sup.instances["nginx"].state
	h.sup.mu.Unlock()
	if nginx != Stopped {
		t.Fatalf("nginx, stopped by the operator, is %s after db's restart", nginx)
	}
	h.untouched(n, worker)
}

// restart_with binds a dependent to its dependency as a whole: a restart
// or stop of one of web's two instances leaves nginx running, and it
// stops only with the last.
func TestRestartWithFollowsTheWholeProgram(t *testing.T) {
	progs := chain(2)
	progs[2].BoundTo = map[string]bool{"web": true}
	h := newHarness(t, progs...)
	h.running("db", "web:0", "web:1")
	ids := h.running("nginx")
	n := len(h.eventsOf(t))
	if err := h.sup.Restart(bg(t), []string{"web:0"}, ctl.RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.sup.Stop(bg(t), []string{"web:0"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	h.untouched(n, ids)
	if err := h.sup.Stop(bg(t), []string{"web:1"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := h.stoppedOrder(), []string{"web:0", "nginx", "web:1"}; !slices.Equal(got, want) {
		t.Fatalf("stopped in the order %v, want %v", got, want)
	}
	if err := h.sup.Start(bg(t), []string{"web:1"}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("nginx", Running)
}

// --with-dependents takes down everything that depends on the programs,
// bound or not, deepest first, and brings it back once they run.
func TestWithDependents(t *testing.T) {
	progs := chain(1)
	progs = append(progs, program("worker", func(p *config.Program) { p.DependsOn = []string{"db"} }))
	h := newHarness(t, progs...)
	h.running("db")
	before := h.running("web", "nginx", "worker")
	if err := h.sup.Restart(bg(t), []string{"db"}, ctl.RestartOptions{WithDependents: true}); err != nil {
		t.Fatal(err)
	}
	// web and worker, a level, stop together, in either order.
	level := func(order []string) []string {
		if len(order) >= 3 {
			slices.Sort(order[1:3])
		}
		return order
	}
	if got, want := level(h.stoppedOrder()), []string{"nginx", "web", "worker"}; !slices.Equal(got, want) {
		t.Fatalf("stopped in the order %v, want %v", got, want)
	}
	for k, id := range before {
		h.waitState(k, Running)
		if h.procID(k) == id {
			t.Errorf("%s was not restarted", k)
		}
	}
	if err := h.sup.Stop(bg(t), []string{"db"}, ctl.StopOptions{WithDependents: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := level(h.stoppedOrder()[3:]), []string{"nginx", "web", "worker", "db"}; !slices.Equal(got, want) {
		t.Fatalf("stopped in the order %v, want %v", got, want)
	}
	if err := h.sup.Start(bg(t), []string{"db"}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	for k := range before {
		h.waitState(k, Running)
	}
}

// A program's end for good stops what restart_with binds to it; they run
// again when it is started.
func TestFinalExitStopsBoundDependents(t *testing.T) {
	progs := stackOf()
	progs[0].Restart = config.RestartNever
	h := newHarness(t, progs...)
	h.running("db", "web", "nginx", "worker")
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

// chain is db ← web (instances of it) ← nginx, nothing bound.
func chain(webInstances int) []*config.Program {
	return []*config.Program{
		program("db"),
		program("web", func(p *config.Program) {
			p.DependsOn = []string{"db"}
			p.Instances = webInstances
		}),
		program("nginx", func(p *config.Program) { p.DependsOn = []string{"web"} }),
	}
}

// untouched fails the test if any of keys changed state in the events
// after the n-th, or runs another process than in ids.
func (h *harness) untouched(n int, ids map[string]string) {
	h.t.Helper()
	for _, ev := range h.eventsOf(h.t)[n:] {
		if _, ok := ids[ev.Program]; ok {
			h.t.Errorf("%s went %s → %s (%s); a dependent is left alone", ev.Program, ev.From, ev.To, ev.Message)
		}
	}
	for k, id := range ids {
		if got := h.procID(k); got != id {
			h.t.Errorf("%s runs process %q, was %q", k, got, id)
		}
	}
}

func (h *harness) running(keys ...string) (ids map[string]string) {
	h.t.Helper()
	ids = map[string]string{}
	for _, k := range keys {
		h.waitState(k, Running)
		ids[k] = h.procID(k)
	}
	return ids
}

// chainUp runs chain(webInstances) until everything runs, and returns the
// processes of dependents and how many events came so far.
func chainUp(t *testing.T, webInstances int, dependents ...string) (h *harness, ids map[string]string, n int) {
	t.Helper()
	h = newHarness(t, chain(webInstances)...)
	h.running("db")
	h.running(h.keysOf("web")...)
	ids = h.running(dependents...)
	return h, ids, len(h.eventsOf(t))
}

// Restarting one of web's two instances leaves nginx, which depends on
// web, running: the other instance serves throughout.
func TestRestartOfOneInstanceLeavesDependentsRunning(t *testing.T) {
	h, ids, n := chainUp(t, 2, "nginx")
	if err := h.sup.Restart(bg(t), []string{"web:0"}, ctl.RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	h.untouched(n, ids)
}

// Stopping one of web's instances leaves nginx running, and the instance
// left is enough for nginx to start again after a crash.
func TestStopOfOneInstanceLeavesDependentsRunning(t *testing.T) {
	h, ids, n := chainUp(t, 2, "nginx")
	if err := h.sup.Stop(bg(t), []string{"web:0"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	h.untouched(n, ids)
	h.exit("nginx", 1)
	h.waitState("nginx", Running)
}

// Restarting a single-instance dependency leaves its dependents running,
// as its crash would.
func TestRestartOfADependencyLeavesDependentsRunning(t *testing.T) {
	h, ids, n := chainUp(t, 1, "web", "nginx")
	if err := h.sup.Restart(bg(t), []string{"db"}, ctl.RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	h.untouched(n, ids)
}

// Stopping a single-instance dependency leaves its dependents running; one
// that crashes meanwhile waits for it, as after a crash of the dependency,
// and starts once it is back.
func TestStopOfADependencyLeavesDependentsRunning(t *testing.T) {
	h, ids, n := chainUp(t, 1, "web", "nginx")
	if err := h.sup.Stop(bg(t), []string{"db"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	h.untouched(n, ids)
	delete(ids, "web")
	h.exit("web", 1)
	h.waitState("web", Waiting)
	if err := h.sup.Start(bg(t), []string{"db"}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("web", Running)
	h.untouched(n, ids)
}

// A dependent stopped with its dependency comes back with it even when a
// reload meanwhile dropped the dependency from its depends_on: the stop's
// cause is remembered, not looked up in the new config.
func TestStoppedDependentReturnsAfterAReloadDroppedTheDependency(t *testing.T) {
	h := newHarness(t, stackOf()...)
	h.running("db", "web", "nginx", "worker")
	if err := h.sup.Stop(context.Background(), []string{"db"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("web", Stopped)
	progs := stackOf()
	progs[1].DependsOn, progs[1].BoundTo = nil, nil // web no longer names db
	h.sup.mu.Lock()
	sup := h.sup.cfg.Supervisor
	h.sup.mu.Unlock()
	if err := h.sup.ApplyConfig(context.Background(), &config.Config{File: "test.toml", Supervisor: sup, Programs: progs}); err != nil {
		t.Fatal(err)
	}
	if err := h.sup.Start(context.Background(), []string{"db"}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("web", Running)
	h.waitState("nginx", Running)
}

// Many programs, one chain among them: the chain's dependents are woken
// by their dependency and no other program is looked at (the index), and
// every program runs.
func TestDependentsAmongManyPrograms(t *testing.T) {
	progs := stackOf()
	for i := range 200 {
		progs = append(progs, program("p"+strconv.Itoa(i)))
	}
	h := newHarness(t, progs...)
	h.running("db", "web", "nginx", "worker")
	for i := range 200 {
		h.waitState("p"+strconv.Itoa(i), Running)
	}
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	if got := h.sup.dependents["db"]; !slices.Equal(slices.Sorted(slices.Values(got)), []string{"web", "worker"}) {
		t.Errorf("dependents of db: %v, want web and worker", got)
	}
	if got := h.sup.dependents["p0"]; len(got) != 0 {
		t.Errorf("dependents of p0: %v, want none", got)
	}
	if n := len(h.sup.byProgram); n != len(progs) {
		t.Errorf("%d programs indexed, want %d", n, len(progs))
	}
}
