package supervisor

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
	"github.com/supervise-dev/supervise/config"
)

// ownGoroutines lists the goroutines running code of this module, but the
// calling test's own.
func ownGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/supervise-dev/supervise/") && !strings.Contains(g, "supervisor.TestNoGoroutineOutlivesRun") {
			out = append(out, g)
		}
	}
	return out
}

// TestNoGoroutineOutlivesRun: every goroutine the supervisor starts has an
// owner that waits for it, so none is left once Run has returned: not the
// workers, health checks, log routers being closed after a reload, file
// watchers, nor the streams of clients that never hung up.
func TestNoGoroutineOutlivesRun(t *testing.T) {
	// An earlier test's Run may have returned a moment ago with the
	// goroutine that called it still on its way out.
	if g := settledGoroutines(10 * time.Second); len(g) > 0 {
		t.Fatalf("goroutines before the test:\n%s", strings.Join(g, "\n\n"))
	}
	clock := fakeclock.New(t0)
	rt := newFakeRuntime(clock)
	ready := func(p *config.Program) { p.ReadyLogLine = "ready" }
	cfg := &config.Config{File: "test.toml", Supervisor: config.Supervisor{Workers: 2, ShutdownTimeout: 5 * time.Second},
		Programs: []*config.Program{program("web", ready), program("worker"), program("gone")}}
	var logBuf syncLog
	sup, err := New(Options{Config: cfg, Runtime: rt, Clock: clock, Logger: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug})), Console: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() { code <- sup.Run(ctx) }()
	h := &harness{t: t, clock: clock, rt: rt, sup: sup}
	for _, n := range []string{"web", "worker", "gone"} {
		h.waitState(n, Running)
	}
	// Clients that follow and never hang up.
	if _, err := sup.Logs(context.Background(), nil, 10, true); err != nil {
		t.Fatal(err)
	}
	if _, err := sup.Events(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if _, err := sup.Logs(context.Background(), []string{"web"}, 10, false); err != nil {
		t.Fatal(err)
	}
	// A reload that removes a program and watches a file.
	watched := program("worker", func(p *config.Program) { p.Watch = &config.Watch{Paths: []string{t.TempDir()}} })
	if err := sup.ApplyConfig(context.Background(), &config.Config{File: "test.toml", Supervisor: cfg.Supervisor,
		Programs: []*config.Program{program("web", ready), watched}}); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := sup.waitFor(ctx2, func() bool { return sup.instances["gone"] == nil }); err != nil {
		t.Fatalf("gone was not removed: %s\n%s", sup.statusSummary(), logBuf.String())
	}

	cancel()
	select {
	case <-code:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
	}
	// A goroutine that has told its owner it is done may still be on its
	// way out for a moment; one that is blocked stays, and fails this.
	if g := settledGoroutines(10 * time.Second); len(g) > 0 {
		t.Fatalf("%d goroutines outlived Run:\n%s", len(g), strings.Join(g, "\n\n"))
	}
}

// settledGoroutines waits up to limit (real time, a bound on a hang) for
// ownGoroutines to be empty and returns what is left.
func settledGoroutines(limit time.Duration) []string {
	deadline := time.Now().Add(limit)
	g := ownGoroutines()
	for len(g) > 0 && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
		g = ownGoroutines()
	}
	return g
}

type syncLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
