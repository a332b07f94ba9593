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
	pending   func() bool // nil, or whether a message is on its way (see fire)

	mu       sync.Mutex
	timeout  time.Duration // guarded by mu
	timer    clock.Timer   // guarded by mu
	gen      uint64        // guarded by mu; which arming the pending timer belongs to
	over     bool          // guarded by mu; fired or stopped: nothing more happens
	fired    bool          // guarded by mu; over because it fired (or was triggered)
	deadline time.Time     // guarded by mu; when the pending timer fires
	graced   time.Duration // guarded by mu; the time given since the deadline for messages on their way
}

// pendingGrace is how long a watchdog whose time ran out waits when a
// message is on its way, before it asks again; maxPendingGrace bounds the
// waits since the last kick (and the timeout bounds them too), so that a
// program sending anything but pings cannot keep its watchdog off.
const (
	pendingGrace    = 50 * time.Millisecond
	maxPendingGrace = 5 * time.Second
)

// NewWatchdog arms a watchdog: onTimeout runs (in its own goroutine) once
// timeout passes without a Kick. Arm it when the process starts, as
// systemd does. A timeout of 0 or less never fires. A nil clock is the
// real one. pending, when not nil, says whether a message from the
// program has arrived that its reader has not handed on yet (the
// socket's Pending): as the time runs out with one on its way, the
// watchdog waits a little for it (at most the timeout, and 5 s) instead
// of killing a program that did ping in time, behind a reader that fell
// behind on a loaded machine or across an upgrade's exec.
func NewWatchdog(clk clock.Clock, timeout time.Duration, pending func() bool, onTimeout func()) *Watchdog {
	if clk == nil {
		clk = clock.Real{}
	}
	w := &Watchdog{clock: clk, onTimeout: onTimeout, pending: pending, timeout: timeout}
	w.mu.Lock()
	defer w.mu.Unlock()
	if timeout <= 0 {
		w.over = true
		return w
	}
	w.armLocked(timeout)
	return w
}

// Kick restarts the countdown (WATCHDOG=1). After the watchdog fired or
// was stopped it does nothing.
func (w *Watchdog) Kick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.over {
		w.graced = 0
		w.armLocked(w.timeout)
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
	w.graced = 0
	w.armLocked(d)
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
	w.fired = true
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

// armLocked makes the watchdog fire d from now.
func (w *Watchdog) armLocked(d time.Duration) {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.gen++
	gen := w.gen
	w.deadline = w.clock.Now().Add(d)
	// A timer that fired as it was being re-armed still runs its func:
	// the generation tells it that it is stale.
	w.timer = w.clock.AfterFunc(d, func() { w.fire(gen) })
}

func (w *Watchdog) fire(gen uint64) {
	w.mu.Lock()
	if w.over || gen != w.gen {
		w.mu.Unlock()
		return
	}
	if w.pending != nil && w.graced < min(w.timeout, maxPendingGrace) && w.pending() {
		w.graced += pendingGrace
		w.armLocked(pendingGrace)
		w.mu.Unlock()
		return
	}
	w.over, w.fired = true, true
	w.mu.Unlock()
	w.onTimeout()
}

// WatchdogState is a watchdog handed over to another supervise binary
// (an upgrade in place), for it to go on with the same deadline.
type WatchdogState struct {
	Timeout time.Duration `json:"timeout"` // the program's own, after a WATCHDOG_USEC=
	// Armed: it fires unless kicked in time (Left from Taken on); false
	// once stopped or disarmed (WATCHDOG_USEC=0). A watchdog that fired is
	// armed with nothing left: the next binary fires it at once.
	Armed bool          `json:"armed"`
	Left  time.Duration `json:"left"`
	// Taken is CLOCK_MONOTONIC (ns) when the state was taken: the next
	// binary counts the time since (the exec's) out of Left.
	Taken int64 `json:"taken,omitempty"`
}

// State is what RestoreWatchdog needs to go on with w's deadline.
func (w *Watchdog) State() WatchdogState {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := WatchdogState{Timeout: w.timeout, Taken: monotonicNow()}
	switch {
	case w.fired:
		st.Armed = true
	case !w.over:
		st.Armed = true
		st.Left = max(0, w.deadline.Sub(w.clock.Now()))
	}
	return st
}

// RestoreWatchdog is NewWatchdog for a watchdog another binary handed over:
// it fires when st's deadline passes (the time since st was taken
// counted), at once if that is gone; never when st is not armed. What is
// left is at most st.Timeout, whatever st says.
// pending is NewWatchdog's: the pings sent during the exec wait in the
// socket, and the new binary's reader has not read them yet when the
// restored watchdog's time runs out.
func RestoreWatchdog(clk clock.Clock, st WatchdogState, pending func() bool, onTimeout func()) *Watchdog {
	if clk == nil {
		clk = clock.Real{}
	}
	w := &Watchdog{clock: clk, onTimeout: onTimeout, pending: pending, timeout: st.Timeout}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !st.Armed || st.Timeout <= 0 {
		w.over = true
		return w
	}
	left := min(max(st.Left, 0), st.Timeout) - sinceMonotonic(st.Taken)
	w.armLocked(max(left, 0))
	return w
}
