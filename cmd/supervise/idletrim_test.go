package main

import (
	"log/slog"
	"runtime"
	"testing"
	"time"
)

// fakeTimer is a timer the test fires by hand.
type fakeTimer struct {
	f       func()
	d       time.Duration
	pending bool
	resets  int
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	was := t.pending
	t.d, t.pending = d, true
	t.resets++
	return was
}

func (t *fakeTimer) Stop() bool {
	was := t.pending
	t.pending = false
	return was
}

func (t *fakeTimer) fire() {
	if t.pending {
		t.pending = false
		t.f()
	}
}

func TestIdleTrim(t *testing.T) {
	var timer *fakeTimer
	releases, startups := 0, 0
	tr := &idleTrim{quiet: 5 * time.Second, log: slog.New(slog.DiscardHandler),
		startupRelease: func() error { startups++; return nil },
		release:        func() error { releases++; return nil },
		afterFunc: func(d time.Duration, f func()) resetter {
			timer = &fakeTimer{f: f, d: d, pending: true}
			return timer
		}}

	tr.touched() // a request during start-up: the start-up's release comes anyway
	if timer != nil || releases != 0 {
		t.Fatalf("before start-up: timer %v, %d releases; want none", timer, releases)
	}
	tr.startup()
	if startups != 1 || releases != 0 {
		t.Fatalf("start-up: %d start-up releases and %d others, want 1 and 0", startups, releases)
	}
	tr.touched()
	tr.touched()
	if timer == nil || timer.d != 5*time.Second || !timer.pending || timer.resets != 1 {
		t.Fatalf("after two requests: timer %+v; want one pending after 5s, reset once", timer)
	}
	timer.fire()
	if releases != 1 {
		t.Fatalf("once quiet: %d releases, want 1", releases)
	}
	timer.fire() // no request since: nothing more
	if releases != 1 {
		t.Fatalf("quiet with no request: %d releases, want 1", releases)
	}
	tr.touched()
	tr.stop()
	timer.fire()
	tr.touched()
	if releases != 1 || startups != 1 || timer.pending {
		t.Fatalf("after stop: %d releases, timer pending %v; want 1 and none", releases, timer.pending)
	}
}

// A collection re-arms the release as a request does: the runtime's
// periodic one maps the stack walk's tables back.
func TestIdleTrimAfterACollection(t *testing.T) {
	armed := make(chan time.Duration, 1)
	tr := &idleTrim{quiet: 5 * time.Second, log: slog.New(slog.DiscardHandler),
		startupRelease: func() error { return nil },
		release:        func() error { return nil },
		afterFunc: func(d time.Duration, f func()) resetter {
			armed <- d
			return &fakeTimer{f: f, d: d, pending: true}
		}}
	defer tr.stop()
	tr.startup()
	deadline := time.After(30 * time.Second)
	for {
		runtime.GC()
		select {
		case d := <-armed:
			if d != 5*time.Second {
				t.Fatalf("armed for %v, want 5s", d)
			}
			return
		case <-deadline:
			t.Fatal("30 s of collections, and the release was never armed")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
