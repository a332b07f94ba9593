package watch

import (
	"time"

	"github.com/supervise-dev/supervise/clock"
)

// debouncer is the timer of one batch: every touch pushes the deadline to
// delay after it (trailing edge), but never past maxWait after the batch's
// first touch, so a tree that never goes quiet still fires now and then.
// It belongs to one goroutine.
type debouncer struct {
	clock   clock.Clock
	delay   time.Duration
	maxWait time.Duration // 0: no cap
	timer   clock.Timer
	first   time.Time // first touch of the pending batch
	pending bool
}

// touch records an event: the batch fires delay from now, or at
// first+maxWait if that is sooner.
func (d *debouncer) touch() {
	now := d.clock.Now()
	if !d.pending {
		d.first, d.pending = now, true
	}
	wait := d.delay
	if d.maxWait > 0 {
		wait = min(wait, d.first.Add(d.maxWait).Sub(now))
	}
	if d.timer == nil {
		d.timer = d.clock.NewTimer(wait)
		return
	}
	d.timer.Reset(wait)
}

// C delivers once the pending batch is due; nil (blocks forever in a
// select) when nothing is pending.
func (d *debouncer) C() <-chan time.Time {
	if !d.pending {
		return nil
	}
	return d.timer.C()
}

// fired ends the batch; the caller has received from C.
func (d *debouncer) fired() { d.pending = false }

func (d *debouncer) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
}
