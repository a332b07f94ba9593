package supervisor

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
)

// The controller on a fake clock with a fake runtime: these tests never
// sleep to wait for a delay; they step the clock and wait (bounded, in real
// time) for the controller to react.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func program(name string, mod ...func(*config.Program)) *config.Program {
	p := &config.Program{
		Name:             name,
		Command:          []string{name},
		Restart:          config.RestartAlways,
		SuccessExitCodes: []int{0},
		Instances:        1,
		Autostart:        true,
		StopTimeout:      time.Second,
		Backoff:          config.Backoff{Initial: 10 * time.Second, Max: 5 * time.Minute, ResetAfter: 10 * time.Minute},
		Sandbox:          config.Sandbox{Umask: -1},
	}
	for _, m := range mod {
		m(p)
	}
	return p
}

type harness struct {
	t     *testing.T
	clock *fakeclock.Clock
	rt    *fakeRuntime
	sup   *Supervisor
	stop  context.CancelFunc
	code  chan int
	// release, set when the supervisor was frozen and handed over
	// (handOver), lets it end without touching what it handed over.
	release func()
}

func newHarness(t *testing.T, programs ...*config.Program) *harness {
	t.Helper()
	return newHarnessSetup(t, nil, programs...)
}

// newHarnessSetup lets setup prepare the fake runtime before anything starts.
func newHarnessSetup(t *testing.T, setup func(*fakeRuntime), programs ...*config.Program) *harness {
	t.Helper()
	return newHarnessWorkers(t, 2, setup, programs...)
}

// newHarnessWorkers is newHarnessSetup with n workers.
func newHarnessWorkers(t *testing.T, n int, setup func(*fakeRuntime), programs ...*config.Program) *harness {
	t.Helper()
	clock := fakeclock.New(t0)
	rt := newFakeRuntime(clock)
	if setup != nil {
		setup(rt)
	}
	cfg := &config.Config{File: "test.toml", Supervisor: config.Supervisor{Workers: n, ShutdownTimeout: 5 * time.Second}, Programs: programs}
	// Only errors are kept: an illegal transition's line, for the report.
	errs := &lockedLog{}
	sup, err := New(Options{Config: cfg, Runtime: rt, Clock: clock, Logger: slog.New(slog.NewTextHandler(errs, &slog.HandlerOptions{Level: slog.LevelError})), Console: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, clock: clock, rt: rt, sup: sup, stop: cancel, code: make(chan int, 1)}
	go func() { h.code <- sup.Run(ctx) }()
	t.Cleanup(func() {
		if h.release != nil {
			h.release()
		}
		cancel()
		select {
		case <-h.code:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
		sup.mu.Lock()
		defer sup.mu.Unlock()
		if sup.illegal != 0 {
			t.Errorf("%d illegal state transitions were refused:\n%s", sup.illegal, errs.String())
		}
	})
	return h
}

// lockedLog is a log sink the supervisor's goroutines write at once.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitState waits (bounded, real time) until key is in state st.
func (h *harness) waitState(key string, st State) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := h.sup.waitFor(ctx, func() bool {
		in := h.sup.instances[key]
		return in != nil && in.state == st
	})
	if err != nil {
		h.t.Fatalf("%s never reached %s; now: %s", key, st, h.sup.statusSummary())
	}
}

// stepWhenArmed waits until a timer is armed for now+d, then steps the
// clock by d: stepping before the queue armed its timer would skip it.
func (h *harness) stepWhenArmed(d time.Duration) {
	h.t.Helper()
	at := h.clock.Now().Add(d)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.clock.WaitForWaiterAt(ctx, at); err != nil {
		h.t.Fatalf("no timer armed for %v: %v", at, err)
	}
	h.clock.Step(d)
}

// exit makes name's process exit with code and waits until the controller
// has handled that exit.
func (h *harness) exit(name string, code int) {
	h.t.Helper()
	h.sup.mu.Lock()
	old := h.sup.instances[name].procID
	h.sup.mu.Unlock()
	if !h.rt.exit(name, code) {
		h.t.Fatalf("%s has no running process", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.sup.waitFor(ctx, func() bool { return h.sup.instances[name].procID != old }); err != nil {
		h.t.Fatalf("exit of %s never handled; now: %s", name, h.sup.statusSummary())
	}
}

func TestCrashBackoffKubeletSequence(t *testing.T) {
	h := newHarness(t, program("crash"))
	h.waitState("crash", Running)

	// Quick crashes: the kubelet restarts after 0, 10, 20, 40, 80, 160, 300, 300 s.
	want := []time.Duration{0, 10, 20, 40, 80, 160, 300, 300}
	for i, d := range want {
		h.exit("crash", 1)
		if d == 0 {
			h.waitState("crash", Running)
		} else {
			h.waitState("crash", CrashLoopBackOff)
			st, _ := h.sup.Status(context.Background(), []string{"crash"})
			if got := time.Duration(st[0].NextStartInMs) * time.Millisecond; got != d*time.Second {
				t.Fatalf("crash %d: next start in %v, want %v", i+1, got, d*time.Second)
			}
			h.stepWhenArmed(d * time.Second)
			h.waitState("crash", Running)
		}
	}
	starts := h.rt.startTimes("crash")
	if len(starts) != len(want)+1 {
		t.Fatalf("%d starts, want %d", len(starts), len(want)+1)
	}
	for i, d := range want {
		if gap := starts[i+1].Sub(starts[i]); gap != d*time.Second {
			t.Errorf("gap %d = %v, want %v", i+1, gap, d*time.Second)
		}
	}

	// A run longer than reset_after: the next crash restarts at once.
	h.clock.Step(11 * time.Minute)
	h.exit("crash", 1)
	h.waitState("crash", Running)
	if n := len(h.rt.startTimes("crash")); n != len(want)+2 {
		t.Fatalf("after a stable run: %d starts, want %d", n, len(want)+2)
	}
	// … and the sequence starts over.
	h.exit("crash", 1)
	h.waitState("crash", CrashLoopBackOff)
	st, _ := h.sup.Status(context.Background(), []string{"crash"})
	if st[0].NextStartInMs != 10_000 {
		t.Fatalf("after reset: next start in %d ms, want 10000", st[0].NextStartInMs)
	}
}

func TestRestartPolicies(t *testing.T) {
	h := newHarness(t,
		program("once", func(p *config.Program) { p.Restart = config.RestartOnFailure }),
		program("three", func(p *config.Program) { p.Restart = config.RestartOnFailure; p.SuccessExitCodes = []int{3} }),
		program("retry", func(p *config.Program) { p.Restart = config.RestartOnFailure }),
		program("never", func(p *config.Program) { p.Restart = config.RestartNever }),
	)
	for _, n := range []string{"once", "three", "retry", "never"} {
		h.waitState(n, Running)
	}
	h.exit("once", 0)
	h.waitState("once", Completed)
	h.exit("three", 3)
	h.waitState("three", Completed)
	h.exit("never", 2)
	h.waitState("never", Failed)
	h.exit("retry", 3)
	h.waitState("retry", Running) // first crash: restarted at once
	if n := len(h.rt.startTimes("retry")); n != 2 {
		t.Fatalf("retry started %d times, want 2", n)
	}
	for _, n := range []string{"once", "three", "never"} {
		if c := len(h.rt.startTimes(n)); c != 1 {
			t.Errorf("%s started %d times, want 1", n, c)
		}
	}
}

func TestHooksOrderAndFailingPreStart(t *testing.T) {
	hook := func(cmd string) *config.Hook { return &config.Hook{Command: []string{cmd}, Timeout: time.Second} }
	// The hook must fail from the first start: set before anything runs.
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.execFail["fail"] = true },
		program("web", func(p *config.Program) {
			p.Hooks = config.Hooks{PreStart: hook("pre_start"), PostStart: hook("post_start"), PreStop: hook("pre_stop"), PostStop: hook("post_stop")}
		}),
		program("bad", func(p *config.Program) { p.Hooks.PreStart = hook("fail") }),
	)

	h.waitState("web", Running)
	if err := h.sup.Stop(context.Background(), []string{"web"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("web", Stopped)
	var got []string
	for _, c := range h.rt.hookLog() {
		if c != "fail" {
			got = append(got, c)
		}
	}
	if want := []string{"pre_start", "post_start", "pre_stop", "post_stop"}; !slices.Equal(got, want) {
		t.Errorf("hooks ran %v, want %v", got, want)
	}

	// A failing pre_start is a crash: first retry at once, then back-off.
	h.waitState("bad", CrashLoopBackOff)
	st, _ := h.sup.Status(context.Background(), []string{"bad"})
	if st[0].LastExit == nil || st[0].LastExit.Reason != ReasonHookError {
		t.Fatalf("last exit %+v, want reason HookError", st[0].LastExit)
	}
	if len(h.rt.startTimes("bad")) != 0 {
		t.Fatal("bad's process started despite a failing pre_start")
	}
}

func TestDependsOnOrder(t *testing.T) {
	h := newHarness(t,
		program("b", func(p *config.Program) { p.DependsOn = []string{"a"} }),
		program("a", func(p *config.Program) { p.Autostart = false }),
	)
	h.waitState("b", Waiting)
	if err := h.sup.Start(context.Background(), []string{"a"}, ctl.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("b", Running)
	if a, b := h.rt.startTimes("a"), h.rt.startTimes("b"); len(a) != 1 || len(b) != 1 {
		t.Fatalf("starts a=%d b=%d", len(a), len(b))
	}
}

func TestManualRestartClearsBackoff(t *testing.T) {
	h := newHarness(t, program("web"))
	h.waitState("web", Running)
	h.exit("web", 1)
	h.waitState("web", Running)
	h.exit("web", 1)
	h.waitState("web", CrashLoopBackOff)
	if err := h.sup.Restart(context.Background(), []string{"web"}, ctl.RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitState("web", Running)
	if n := len(h.rt.startTimes("web")); n != 3 {
		t.Fatalf("%d starts, want 3", n)
	}
	// The backoff was cleared: the next crash restarts at once.
	h.exit("web", 1)
	h.waitState("web", Running)
}

// RESTARTS counts what the kubelet's restartCount does: restarts after the
// program's own exits, not the ones an operator asked for.
func TestRestartCountLeavesOutManualRestarts(t *testing.T) {
	h := newHarness(t, program("web"))
	h.waitState("web", Running)
	restarts := func() int {
		h.sup.mu.Lock()
		defer h.sup.mu.Unlock()
		return h.sup.instances["web"].restarts
	}
	for range 2 {
		if err := h.sup.Restart(context.Background(), []string{"web"}, ctl.RestartOptions{}); err != nil {
			t.Fatal(err)
		}
		h.waitState("web", Running)
	}
	if n := restarts(); n != 0 {
		t.Errorf("after 2 manual restarts RESTARTS = %d, want 0", n)
	}
	h.exit("web", 1)
	h.waitState("web", Running)
	if n := restarts(); n != 1 {
		t.Errorf("after a crash RESTARTS = %d, want 1", n)
	}
}

func TestReloadTouchesOnlyChanged(t *testing.T) {
	h := newHarness(t, program("keep"), program("change"), program("tune"), program("drop"))
	for _, n := range []string{"keep", "change", "tune", "drop"} {
		h.waitState(n, Running)
	}
	cfg := &config.Config{File: "test.toml", Supervisor: config.Supervisor{Workers: 2}, Programs: []*config.Program{
		program("keep"),
		program("change", func(p *config.Program) { p.Env = map[string]string{"X": "1"} }),
		program("tune", func(p *config.Program) { p.Backoff.Initial = time.Second }),
		program("new"),
	}}
	if err := h.sup.ApplyConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	h.waitState("new", Running)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.sup.waitFor(ctx, func() bool {
		return h.sup.instances["drop"] == nil && len(h.rt.startTimes("change")) == 2 && h.sup.instances["change"].state == Running
	}); err != nil {
		t.Fatalf("reload not applied: %s", h.sup.statusSummary())
	}
	for n, want := range map[string]int{"keep": 1, "tune": 1, "change": 2, "new": 1} {
		if got := len(h.rt.startTimes(n)); got != want {
			t.Errorf("%s started %d times, want %d", n, got, want)
		}
	}
}

func TestAllNeverExitsWithFirstFailure(t *testing.T) {
	never := func(p *config.Program) { p.Restart = config.RestartNever }
	h := newHarness(t, program("a", never), program("b", never))
	h.waitState("a", Running)
	h.waitState("b", Running)
	h.exit("b", 4)
	h.waitState("b", Failed)
	h.exit("a", 0)
	select {
	case code := <-h.code:
		if code != 4 {
			t.Fatalf("exit code %d, want 4", code)
		}
		h.code <- code // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("supervisor did not exit when every program had ended")
	}
}

func TestExitOnEndsWithThatProgramsStatus(t *testing.T) {
	for _, how := range []string{"exit_on", "critical"} {
		t.Run(how, func(t *testing.T) {
			main := program("main", func(p *config.Program) {
				p.Restart = config.RestartOnFailure
				p.Critical = how == "critical"
			})
			side := program("side")
			clock := fakeclock.New(t0)
			rt := newFakeRuntime(clock)
			cfg := &config.Config{File: "t.toml", Supervisor: config.Supervisor{Workers: 2}, Programs: []*config.Program{main, side}}
			if how == "exit_on" {
				cfg.Supervisor.ExitOn = []string{"main"}
			}
			// Only errors are kept: an illegal transition's line, for the report.
			errs := &lockedLog{}
			sup, err := New(Options{Config: cfg, Runtime: rt, Clock: clock, Logger: slog.New(slog.NewTextHandler(errs, &slog.HandlerOptions{Level: slog.LevelError})), Console: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			code := make(chan int, 1)
			go func() { code <- sup.Run(context.Background()) }()
			h := &harness{t: t, clock: clock, rt: rt, sup: sup}
			h.waitState("main", Running)
			h.waitState("side", Running)
			h.exit("main", 9) // a failure with on-failure: restarted, not the end
			h.waitState("main", Running)
			select {
			case c := <-code:
				t.Fatalf("supervisor exited (%d) on a failure that is restarted", c)
			default:
			}
			rt.exit("main", 0) // the end for good
			select {
			case c := <-code:
				if c != 0 {
					t.Fatalf("exit code %d, want 0", c)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("supervisor did not exit when the program ended for good")
			}
			if st := sup.instances["side"].state; st != Stopped {
				t.Errorf("side is %s, want Stopped", st)
			}
		})
	}
}

// A critical program that fails for good gives the supervisor its status.
func TestCriticalFailureIsTheExitStatus(t *testing.T) {
	main := program("main", func(p *config.Program) { p.Restart = config.RestartNever; p.Critical = true })
	h := newHarness(t, main, program("side"))
	h.waitState("main", Running)
	h.waitState("side", Running)
	h.rt.exit("main", 9)
	select {
	case c := <-h.code:
		h.code <- c // for the cleanup
		if c != 9 {
			t.Fatalf("exit code %d, want 9", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("supervisor did not exit when the critical program failed")
	}
}

// The shutdown deletes the sandboxes only once every program's exit was
// handled: a post_stop hook still running in its sandbox is not cut off
// (the example config's web lost its post_stop at every shutdown).
func TestShutdownWaitsForPostStop(t *testing.T) {
	release := make(chan struct{})
	web := program("web", func(p *config.Program) {
		p.Hooks.PostStop = &config.Hook{Command: []string{"post"}, Timeout: time.Minute}
	})
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.blockExec = map[string]chan struct{}{"post": release} }, web)
	h.waitState("web", Running)
	h.stop() // the shutdown begins
	h.waitFor("post_stop running", func() bool {
		return h.sup.instances["web"].procID == "" && h.sup.instances["web"].state == Exited
	})
	// A shutdown that does not wait for the hook deletes the sandbox under
	// it, which ends the hook and lets Run return; one that waits returns
	// only once the hook is released. How long to watch for the first is
	// a bound, not a delay the logic needs: on a very slow machine the
	// test could miss the defect, never report one that is not there.
	select {
	case <-h.code:
	case <-time.After(200 * time.Millisecond):
		close(release)
		select {
		case <-h.code:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return")
		}
	}
	h.code <- 0 // for the harness's cleanup
	h.rt.mu.Lock()
	defer h.rt.mu.Unlock()
	if len(h.rt.goneExec) > 0 {
		t.Fatalf("post_stop ran after its sandbox was deleted: %v", h.rt.goneExec)
	}
}

// A program waiting out its crash backoff while the shutdown holds it
// (a dependent still stopping) is stopped, not ended for good: its backoff
// timer fired in that window, the reconcile took the shutdown for an exit
// of its own to settle, and CrashLoopBackOff → Failed was refused as an
// illegal transition (seen in a CI run, with a post_start that failed).
func TestBackoffEndingDuringTheShutdownIsAStop(t *testing.T) {
	db := program("db")
	web := program("web", func(p *config.Program) {
		p.DependsOn = []string{"db"}
		p.StopTimeout = time.Minute
	})
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.ignoreTerm = map[string]bool{"web": true} }, db, web)
	h.waitState("web", Running)
	h.exit("db", 1)
	h.waitState("db", Running) // the first crash restarts at once
	h.exit("db", 1)
	h.waitState("db", CrashLoopBackOff)
	h.stop()
	h.waitState("web", Stopping)      // it ignores its stop signal: db waits for it
	h.stepWhenArmed(10 * time.Second) // db's backoff ends during the shutdown
	h.stepWhenArmed(50 * time.Second) // web's grace ends: SIGKILL, then db goes
	h.waitState("db", Stopped)
	// The harness's cleanup fails the test on an illegal transition.
}
