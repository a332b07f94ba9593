package supervisor

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
)

// execCount counts the runs of cmd so far (probes and hooks alike).
func (f *fakeRuntime) execCount(cmd string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.execs {
		if c == cmd {
			n++
		}
	}
	return n
}

// Probes end when the stop begins: a database shutting down is not asked
// every second whether it is ready (pg_isready made PostgreSQL log a FATAL
// per probe through its whole shutdown).
func TestProbesStopWhenTheStopBegins(t *testing.T) {
	db := program("db", func(p *config.Program) {
		p.Probes.Readiness = commandProbe("db-ready", 1)
		p.Probes.Liveness = commandProbe("db-live", 3)
		p.StopTimeout = 30 * time.Second
	})
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.ignoreTerm = map[string]bool{"db": true} }, db)
	h.waitState("db", Running)
	h.stepUntil("db ready", time.Second, func() bool { return h.sup.instances["db"].ready })

	stopped := make(chan error, 1)
	go func() { stopped <- h.sup.Stop(context.Background(), []string{"db"}, ctl.StopOptions{}) }()
	h.waitState("db", Stopping)
	// The stop has begun (its signal ignored): let 20 s of its grace pass.
	// Probe timers are re-armed asynchronously: after each step, give a
	// probe still alive a moment (real time) to show itself.
	ready, live := h.rt.execCount("db-ready"), h.rt.execCount("db-live")
	ran := func() bool { return h.rt.execCount("db-ready") != ready || h.rt.execCount("db-live") != live }
	for i := 0; i < 20 && !ran(); i++ {
		h.clock.Step(time.Second)
		for wait := time.Now().Add(20 * time.Millisecond); time.Now().Before(wait) && !ran(); {
			runtime.Gosched()
		}
	}
	if ran() {
		t.Errorf("during the stop's grace the probes ran %d (readiness) and %d (liveness) more times, want 0",
			h.rt.execCount("db-ready")-ready, h.rt.execCount("db-live")-live)
	}
	h.stepUntil("db stopped", time.Second, func() bool { return h.sup.instances["db"].state == Stopped })
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}
