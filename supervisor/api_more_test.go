package supervisor

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/logs"
)

func bg(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor waits (bounded, real time) until cond holds under the lock.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.sup.waitFor(ctx, cond); err != nil {
		h.t.Fatalf("%s: never; now: %s", what, h.sup.statusSummary())
	}
}

func TestSignalCommand(t *testing.T) {
	h := newHarness(t, program("web"), program("idle", func(p *config.Program) { p.Autostart = false }))
	h.waitState("web", Running)
	if err := h.sup.Signal(bg(t), syscall.SIGHUP, []string{"nope"}); !errors.Is(err, ctl.ErrUnknownProgram) {
		t.Fatalf("signal to an unknown program: %v", err)
	}
	if err := h.sup.Signal(bg(t), syscall.SIGHUP, []string{"idle"}); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("signal to a stopped program: %v", err)
	}
	// Several names: the stopped one is skipped, the running one signalled
	// (the fake process ends on it and comes back as after a crash).
	old := h.procID("web")
	if err := h.sup.Signal(bg(t), syscall.SIGUSR1, []string{"web", "idle"}); err != nil {
		t.Fatalf("signal: %v", err)
	}
	h.waitFor("web restarted after the signal ended it", func() bool {
		in := h.sup.instances["web"]
		return in.state == Running && in.procID != old && in.procID != ""
	})
}

// newHarnessFile runs a supervisor on the config file at path, with the
// real loader, so that Reload reads it again.
func newHarnessFile(t *testing.T, path string) *harness {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(t0)
	rt := newFakeRuntime(clock)
	sup, err := New(Options{Config: cfg, Runtime: rt, Clock: clock, Load: config.Load,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Console: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, clock: clock, rt: rt, sup: sup, stop: cancel, code: make(chan int, 1)}
	go func() { h.code <- sup.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.code:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return h
}

func TestReloadReadsTheFileAndKeepsTheRunningConfigOnError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "supervise.toml")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(file, []byte("[program.a]\ncommand = \"a\"\n"), 0o644))
	h := newHarnessFile(t, file)
	h.waitState("a", Running)

	must(os.WriteFile(file, []byte("[program.a]\ncommand = \"a\"\n[program.b]\ncommand = \"b\"\n"), 0o644))
	must(h.sup.Reload(bg(t)))
	h.waitState("b", Running)

	must(os.WriteFile(file, []byte("[program.a]\ncommand = \"a\"\nrestart = \"sometimes\"\n"), 0o644))
	err := h.sup.Reload(bg(t))
	if err == nil || !strings.Contains(err.Error(), "running config stays") || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("reload of a bad file: %v", err)
	}
	h.waitState("b", Running) // still there
	ch, err := h.sup.Events(bg(t), false)
	must(err)
	var failed, reloaded bool
	for ev := range ch {
		failed = failed || ev.To == "ReloadFailed"
		reloaded = reloaded || ev.To == "Reloaded"
	}
	if !failed || !reloaded {
		t.Errorf("events: reloaded %v, reload failed %v", reloaded, failed)
	}
}

// TestShutdownThenKill: Shutdown stops everything in order; a program that
// ignores its stop signal holds the shutdown until Kill, which is then
// reported as forced.
func TestShutdownThenKill(t *testing.T) {
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.ignoreTerm = map[string]bool{"stubborn": true} },
		program("stubborn"), program("web"))
	h.waitState("stubborn", Running)
	h.waitState("web", Running)
	if err := h.sup.Shutdown(bg(t)); err != nil {
		t.Fatal(err)
	}
	h.sup.Shutdown(bg(t)) // a second one is the same shutdown
	h.waitFor("web stopped, stubborn stopping", func() bool {
		return h.sup.instances["web"].state == Stopped && h.sup.instances["stubborn"].state == Stopping
	})
	h.sup.Kill()
	var code int
	select {
	case code = <-h.code:
		h.code <- code // for the harness's cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Kill")
	}
	h.sup.mu.Lock()
	forced := slices.Clone(h.sup.forced)
	h.sup.mu.Unlock()
	if !slices.Equal(forced, []string{"stubborn"}) {
		t.Errorf("forced %v, want [stubborn]", forced)
	}
	if _, err := h.sup.Logs(bg(t), nil, 1, false); err == nil {
		t.Errorf("a stream after Run returned was accepted")
	}
}

func TestLogsAndEventsStreams(t *testing.T) {
	h := newHarness(t, program("web"), program("db"))
	h.waitState("web", Running)
	h.waitState("db", Running)
	h.sup.mu.Lock()
	webRing, dbRing := h.sup.instances["web"].logs.ring, h.sup.instances["db"].logs.ring
	h.sup.mu.Unlock()
	for i, l := range []struct {
		r    *logs.Ring
		text string
	}{{webRing, "web 1"}, {dbRing, "db 1"}, {webRing, "web 2"}} {
		l.r.WriteLine(logs.Line{Program: "x", Stream: "stdout", Text: l.text, Time: t0.Add(time.Duration(i) * time.Second)})
	}
	collect := func(ch <-chan logs.Line) []string {
		var out []string
		for l := range ch {
			out = append(out, l.Text)
		}
		return out
	}
	all, err := h.sup.Logs(bg(t), nil, -1, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(all); !slices.Equal(got, []string{"web 1", "db 1", "web 2"}) {
		t.Errorf("all logs in time order: %v", got)
	}
	last, _ := h.sup.Logs(bg(t), []string{"web", "db"}, 1, false)
	if got := collect(last); !slices.Equal(got, []string{"web 2"}) {
		t.Errorf("last line: %v", got)
	}
	if _, err := h.sup.Logs(bg(t), []string{"nope"}, 1, false); !errors.Is(err, ctl.ErrUnknownProgram) {
		t.Errorf("logs of an unknown program: %v", err)
	}

	// Following: what comes after, until the caller leaves.
	ctx, cancel := context.WithCancel(bg(t))
	follow, err := h.sup.Logs(ctx, []string{"db"}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	dbRing.WriteLine(logs.Line{Program: "db", Stream: "stdout", Text: "db 2", Time: t0.Add(time.Minute)})
	select {
	case l := <-follow:
		if l.Text != "db 2" {
			t.Errorf("followed %q", l.Text)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the followed line never came")
	}
	cancel()
	for range follow {
	}

	evs, err := h.sup.Events(bg(t), false)
	if err != nil {
		t.Fatal(err)
	}
	var moves []string
	for ev := range evs {
		if ev.Program == "web" {
			moves = append(moves, ev.From+"→"+ev.To)
		}
	}
	if !slices.Contains(moves, "Starting→Running") {
		t.Errorf("web's events: %v", moves)
	}
}

// A change in a watched program's files restarts it, or signals it when
// the watch names a signal; nothing happens during the shutdown.
func TestFilesChanged(t *testing.T) {
	h := newHarness(t, program("w"), program("s"))
	h.waitState("w", Running)
	h.waitState("s", Running)
	old := h.procID("w")
	h.sup.filesChanged("w", config.Watch{}, []string{"main.go"})
	h.waitFor("w restarted", func() bool {
		in := h.sup.instances["w"]
		return in.state == Running && in.procID != old && in.procID != ""
	})
	h.sup.mu.Lock()
	restarts := h.sup.instances["w"].restarts
	h.sup.mu.Unlock()
	if restarts != 0 {
		t.Errorf("a restart for changed files counted as %d restarts after a crash", restarts)
	}
	old = h.procID("s")
	h.sup.filesChanged("s", config.Watch{Signal: syscall.SIGHUP}, []string{"conf"})
	h.waitFor("s signalled (the fake ends on it) and back", func() bool {
		in := h.sup.instances["s"]
		return in.state == Running && in.procID != old && in.procID != ""
	})
}

// ready_log_line gates a dependent until the line shows in the output.
func TestReadyLogLineGatesDependent(t *testing.T) {
	h := newHarness(t,
		program("db", func(p *config.Program) { p.ReadyLogLine = "accepting connections" }),
		program("app", func(p *config.Program) { p.DependsOn = []string{"db"} }))
	h.waitState("db", Running)
	h.waitState("app", Waiting)
	h.sup.mu.Lock()
	ring := h.sup.instances["db"].logs.ring
	h.sup.mu.Unlock()
	ring.WriteLine(logs.Line{Program: "db", Stream: "stdout", Text: "starting up", Time: t0})
	ring.WriteLine(logs.Line{Program: "db", Stream: "stdout", Text: "now accepting connections on 5432", Time: t0})
	h.waitState("app", Running)
	st, err := h.sup.Status(bg(t), []string{"db"})
	if err != nil || len(st) != 1 || st[0].Ready == nil || !*st[0].Ready {
		t.Fatalf("db status %+v %v, want ready", st, err)
	}
}

func TestRunStepNames(t *testing.T) {
	for s := stepNothing; s <= stepStart; s++ {
		if s.String() == "" {
			t.Errorf("step %d has no name", s)
		}
	}
}

func TestProgramIdent(t *testing.T) {
	if id := programIdent(&config.Program{}); id != nil {
		t.Errorf("no user: %+v", id)
	}
	if id := programIdent(&config.Program{User: "no-such-user-here"}); id != nil {
		t.Errorf("unknown user: %+v", id)
	}
	if os.Geteuid() == 0 {
		if id := programIdent(&config.Program{User: "root"}); id != nil {
			t.Errorf("the supervisor's own user: %+v", id)
		}
	}
	if id := programIdent(&config.Program{User: "nobody"}); id == nil || id.UID != 65534 {
		t.Errorf("nobody: %+v", id)
	}
	if id := programIdent(&config.Program{User: "65534"}); id == nil || id.UID != 65534 {
		t.Errorf("65534: %+v", id)
	}
}
