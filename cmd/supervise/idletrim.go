package main

import (
	"log/slog"
	"runtime"
	"sync"
	"time"
)

// trimQuiet is how long the control socket and the metrics listener must
// have been quiet before what serving them mapped is given back again.
// Requests come in bursts (a person, a script, a deploy); a client that
// asks more often than this keeps its pages, as it goes on using them.
const trimQuiet = 5 * time.Second

// resetter is the part of *time.Timer idleTrim uses.
type resetter interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// idleTrim runs startupRelease (binaryPages.releaseStartup) once every
// program is up, and release (binaryPages.release) once requests and
// collections have stopped for quiet: serving a request maps back 64 KiB
// of the binary around each page it touches (the HTTP server, the JSON
// encoder), and every collection, the runtime's own every two minutes
// included, maps what its walk of each goroutine's stack reads (the
// functions' tables and stack maps): about 3 MiB at 100 programs. At most
// one release per quiet period, and none while nothing came since the
// last one. afterFunc is afterQuiet: a timer whose expiry wakes one
// thread (trim_linux.go).
type idleTrim struct {
	quiet          time.Duration
	startupRelease func() error
	release        func() error
	log            *slog.Logger
	afterFunc      func(d time.Duration, f func()) resetter

	mu      sync.Mutex
	armed   bool     // the start-up's release ran
	stopped bool     // stop was called: no more timers
	timer   resetter // the pending release, made unarmed by newIdleTrim (nil: at the first request)
}

func newIdleTrim(log *slog.Logger) *idleTrim {
	pages := newBinaryPages()
	t := &idleTrim{quiet: trimQuiet, startupRelease: pages.releaseStartup, release: pages.release, log: log,
		afterFunc: afterQuiet}
	// The timer (a timerfd) is made now, not at the first request: a
	// descriptor that appeared at some later request would look like a
	// leak to whoever counts them, and could not be had once they ran out.
	t.timer = t.afterFunc(0, t.run)
	return t
}

// stoppedUnless is tm, stopped unless d > 0: a timer made before it is
// first armed.
func stoppedUnless(tm *time.Timer, d time.Duration) *time.Timer {
	if d <= 0 {
		tm.Stop()
	}
	return tm
}

// startup is the release once every program is up; it arms the idle one.
func (t *idleTrim) startup() {
	if err := t.startupRelease(); err != nil {
		t.log.Debug("releasing the start-up's memory", "err", err)
	}
	t.mu.Lock()
	t.armed = true
	t.mu.Unlock()
	t.watchCollections()
}

// gcSentinel is an object that lives until the next collection; it holds
// a pointer so that it is never one of the tiny allocator's shared blocks.
type gcSentinel struct{ _ *byte }

// watchCollections calls touched after the next collection, and again
// after each one until stop: a sentinel nothing refers to is collected,
// and its cleanup makes the next one.
func (t *idleTrim) watchCollections() {
	runtime.AddCleanup(new(gcSentinel), (*idleTrim).collected, t)
}

func (t *idleTrim) collected() {
	t.mu.Lock()
	stopped := t.stopped
	t.mu.Unlock()
	if stopped {
		return
	}
	t.touched()
	t.watchCollections()
}

// touched says a request came (or a collection ran): the release waits
// until quiet after the last one.
func (t *idleTrim) touched() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.armed || t.stopped {
		return
	}
	if t.timer == nil {
		t.timer = t.afterFunc(t.quiet, t.run)
		return
	}
	t.timer.Reset(t.quiet)
}

// stop ends the timer; touched does nothing after it.
func (t *idleTrim) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
	}
}

func (t *idleTrim) run() {
	if err := t.release(); err != nil {
		t.log.Debug("releasing unused memory", "err", err)
	}
}
