package logs

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Detached is one pipe of a Program handed over (to a new supervise
// binary): its read end, left open and owned by the caller, and the bytes
// read from it that did not end a line yet. The pump stopped between two
// reads, so every complete line read was written, and Pending is what
// the next pump must see first.
type Detached struct {
	Stream  string
	File    *os.File
	Pending []byte
}

// Detach stops every pump of p at a read boundary without closing its
// pipe, and returns the pipes with what each had read of a line not yet
// ended. A pump that reaches end of file meanwhile ends as usual and is
// not returned. p takes no new pipes after; Resume undoes a Detach whose
// hand-over did not happen, Adopt is the other end's.
func (p *Program) Detach(ctx context.Context) ([]Detached, error) {
	p.mu.Lock()
	p.closed = true
	pumps := make(map[*Pump]*os.File, len(p.pipes))
	for pump, r := range p.pipes {
		pumps[pump] = r
		pump.detaching.Store(true)
		// A deadline in the past wakes the pump's Read at once, with
		// nothing consumed: the bytes stay in the pipe.
		_ = r.SetReadDeadline(time.Now())
	}
	p.mu.Unlock()
	var out []Detached
	for pump, r := range pumps {
		select {
		case <-pump.Finished():
		case <-ctx.Done():
			return out, fmt.Errorf("logs of %q: stopping the pumps: %w", p.cfg.Name, ctx.Err())
		}
		if pump.detached {
			out = append(out, Detached{Stream: pump.cfg.Stream, File: r, Pending: pump.pending})
		}
	}
	return out, nil
}

// Resume restarts the pumps Detach stopped, on the same pipes, when the
// hand-over did not happen.
func (p *Program) Resume(ds []Detached) {
	p.mu.Lock()
	p.closed = false
	p.mu.Unlock()
	for _, d := range ds {
		p.Adopt(d.Stream, d.File, d.Pending)
	}
}

// Adopt pumps an inherited read end r into stream's sinks, starting with
// pending, the start of a line read before the hand-over.
func (p *Program) Adopt(stream string, r *os.File, pending []byte) {
	// Detach's deadline, when r is the same file, must not end the new
	// pump at once.
	_ = r.SetReadDeadline(time.Time{})
	// A pseudo-terminal's master (a --tty program's, from the binary
	// before an upgrade) goes on following the console's size (Resize).
	tty := isPtyMaster(r)
	p.mu.Lock()
	defer p.mu.Unlock()
	pump := newPump(r, p.Sink(stream), p.pumpConfig(stream))
	pump.tty = tty
	if len(pending) > 0 {
		pump.now = pump.cfg.Now()
		pump.sp.write(pending)
	}
	pump.after = p.afterPump(pump, r)
	p.pipes[pump] = r
	p.wg.Go(pump.run)
}
