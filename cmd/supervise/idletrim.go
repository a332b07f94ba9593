package main

import (
	"log/slog"
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

// idleTrim runs startupRelease (releaseStartupMemory) once every program
// is up, and release (releaseBinaryPages) once requests have stopped for
// quiet: serving a request maps back 64 KiB of the binary around each
// page it touches (the HTTP server, the JSON encoder, the collector's
// stack walk). At most one release per quiet period, and none while no
// request came since the last one.
type idleTrim struct {
	quiet          time.Duration
	startupRelease func() error
	release        func() error
	log            *slog.Logger
	afterFunc      func(d time.Duration, f func()) resetter

	mu      sync.Mutex
	armed   bool     // the start-up's release ran
	stopped bool     // stop was called: no more timers
	timer   resetter // the pending release; nil before the first request
}

func newIdleTrim(log *slog.Logger) *idleTrim {
	return &idleTrim{quiet: trimQuiet, startupRelease: releaseStartupMemory, release: releaseBinaryPages, log: log,
		afterFunc: func(d time.Duration, f func()) resetter { return time.AfterFunc(d, f) }}
}

// startup is the release once every program is up; it arms the idle one.
func (t *idleTrim) startup() {
	if err := t.startupRelease(); err != nil {
		t.log.Debug("releasing the start-up's memory", "err", err)
	}
	t.mu.Lock()
	t.armed = true
	t.mu.Unlock()
}

// touched says a request came: the release waits until quiet after the
// last one.
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
