package supervisor

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
)

// The shutdown stops a program as soon as what depends on it is down, and
// nothing else waits: c, which nothing orders, stops at once beside b, while
// a waits for b, its dependent, which only SIGKILL ends after its grace.
func TestShutdownStopsEachProgramOnceItsDependentsAreDown(t *testing.T) {
	const grace = 30 * time.Second
	// One grace for all: the queue arms its timer for the earliest stop
	// that waits (c's, when its exit comes after its worker's stop began).
	withGrace := func(p *config.Program) { p.StopTimeout = grace }
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.ignoreTerm = map[string]bool{"b": true} },
		program("a", withGrace),
		program("b", withGrace, func(p *config.Program) { p.DependsOn = []string{"a"} }),
		program("c", withGrace),
	)
	h.running("a", "b", "c")
	h.stop() // the shutdown begins
	h.waitState("b", Stopping)
	h.waitState("c", Stopped)
	if st := h.status("a").State; st != string(Running) {
		t.Fatalf("a is %s while b, which depends on it, still runs; want Running", st)
	}
	h.stepWhenArmed(grace) // b's grace ends: SIGKILL
	h.waitState("a", Stopped)
	if got, want := h.stoppedOrder(), []string{"c", "b", "a"}; !slices.Equal(got, want) {
		t.Errorf("stopped in the order %v, want %v", got, want)
	}
}

// Every process of a shutdown gets its stop signal once, whoever sent it
// (the shutdown, or the worker that carries the stop on), and its run ends
// as one that was stopped, not as a crash, even when its exit is handled
// before its worker came to its stop.
func TestShutdownSignalsEachProcessOnce(t *testing.T) {
	var progs []*config.Program
	var keys []string
	for i := range 20 {
		keys = append(keys, fmt.Sprintf("p%02d", i))
		progs = append(progs, program(keys[i]))
	}
	progs = append(progs, program("hooked", func(p *config.Program) {
		p.Hooks.PreStop = &config.Hook{Command: []string{"drain"}, Timeout: time.Second}
	}))
	keys = append(keys, "hooked")
	h := newHarnessWorkers(t, 1, nil, progs...)
	ids := h.running(keys...)
	h.stop()
	for _, k := range keys {
		h.waitState(k, Stopped)
	}
	h.rt.mu.Lock()
	for _, k := range keys {
		if got := h.rt.signalled[ids[k]]; !slices.Equal(got, []syscall.Signal{syscall.SIGTERM}) {
			t.Errorf("%s's process got the signals %v, want SIGTERM once", k, got)
		}
	}
	h.rt.mu.Unlock()
	h.sup.why.mu.Lock()
	defer h.sup.why.mu.Unlock()
	for _, k := range keys {
		if page := h.sup.why.runs[k]; page == nil || page.last == nil || page.last.Reason != reasonStopped {
			t.Errorf("%s's last run: %+v, want reason %s", k, page, reasonStopped)
		}
	}
}
