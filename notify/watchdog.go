package notify

import (
	"sync"
	"time"

	"github.com/supervise-dev/supervise/clock"
)

// Watchdog calls its callback once when Timeout passes without a Kick: the
// sd_notify WATCHDOG=1 keep-alive of a program with watchdog = "30s". It is
// one timer on the injected clock.
type Watchdog struct {
	clock     clock.Clock
	onTimeout func()

	mu      sync.Mutex
	timeout time.Duration // guarded by mu
	timer   clock.Timer   // guarded by mu
	gen     uint64        // guarded by mu; which arming the pending timer belongs to
	over    bool          // guarded by mu; fired or stopped: nothing more happens
}

// NewWatchdog arms a watchdog: onTimeout runs (in its own goroutine) once
// timeout passes without a Kick. Arm it when the process starts, as
// systemd does. A timeout of 0 or less never fires. A nil clock is the
// real one.
func NewWatchdog(clk clock.Clock, timeout time.Duration, onTimeout func()) *Watchdog {
	if clk == nil {
		clk = clock.Real{}
	}
	w := &Watchdog{clock: clk, onTimeout: onTimeout, timeout: timeout}
	w.mu.Lock()
	defer w.mu.Unlock()
	if timeout <= 0 {
		w.over = true
		return w
	}
	w.armLocked()
	return w
}

// Kick restarts the countdown (WATCHDOG=1). After the watchdog fired or
// was stopped it does nothing.
func (w *Watchdog) Kick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.over {
		w.armLocked()
	}
}

// SetTimeout changes the timeout and restarts the countdown with it
// (WATCHDOG_USEC=… from the program). A timeout of 0 or less disarms the
// watchdog for good.
func (w *Watchdog) SetTimeout(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return
	}
	w.timeout = d
	if d <= 0 {
		w.stopLocked()
		return
	}
	w.armLocked()
}

// Trigger fires the watchdog now (WATCHDOG=trigger), unless it already
// fired or was stopped: onTimeout runs before Trigger returns.
func (w *Watchdog) Trigger() {
	w.mu.Lock()
	if w.over {
		w.mu.Unlock()
		return
	}
	w.stopLocked()
	w.mu.Unlock()
	w.onTimeout()
}

// Stop disarms the watchdog for good. A callback already running is not
// waited for; none starts after Stop returns.
func (w *Watchdog) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked()
}

func (w *Watchdog) stopLocked() {
	w.over = true
	w.gen++
	if w.timer != nil {
		w.timer.Stop()
	}
}

func (w *Watchdog) armLocked() {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.gen++
	gen := w.gen
	// A timer that fired as it was being re-armed still runs its func:
	// the generation tells it that it is stale.
	w.timer = w.clock.AfterFunc(w.timeout, func() { w.fire(gen) })
}

func (w *Watchdog) fire(gen uint64) {
	w.mu.Lock()
	if w.over || gen != w.gen {
		w.mu.Unlock()
		return
	}
	w.over = true
	w.mu.Unlock()
	w.onTimeout()
}
