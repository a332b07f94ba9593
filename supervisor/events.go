package supervisor

import (
	"context"
	"sync"

	"github.com/supervise-dev/supervise/clock"
	"github.com/supervise-dev/supervise/ctl"
)

// eventLog keeps the last state changes and fans new ones out to
// followers. A follower that cannot keep up is cut off (its channel closed)
// rather than allowed to stall the controller.
type eventLog struct {
	clock clock.Clock

	mu        sync.Mutex
	ring      []ctl.Event
	next      int
	full      bool
	followers map[chan ctl.Event]struct{}
}

const followerBuffer = 256

func newEventLog(clk clock.Clock, size int) *eventLog {
	return &eventLog{clock: clk, ring: make([]ctl.Event, size), followers: map[chan ctl.Event]struct{}{}}
}

func (l *eventLog) add(program, from, to, msg string) {
	l.push(ctl.Event{Time: l.clock.Now(), Program: program, From: from, To: to, Message: msg})
}

// addRun records the end of a run of program, with its record.
func (l *eventLog) addRun(program, msg string, run *ctl.RunRecord) {
	l.push(ctl.Event{Time: l.clock.Now(), Program: program, Message: msg, Run: run})
}

func (l *eventLog) push(ev ctl.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.next] = ev
	l.next = (l.next + 1) % len(l.ring)
	if l.next == 0 {
		l.full = true
	}
	for ch := range l.followers {
		select {
		case ch <- ev:
		default:
			delete(l.followers, ch)
			close(ch)
		}
	}
}

// history is the events kept, oldest first.
func (l *eventLog) history() []ctl.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.historyLocked()
}

func (l *eventLog) historyLocked() []ctl.Event {
	if !l.full {
		return append([]ctl.Event(nil), l.ring[:l.next]...)
	}
	out := append([]ctl.Event(nil), l.ring[l.next:]...)
	return append(out, l.ring[:l.next]...)
}

// stream sends the history, then (with follow) every new event until ctx ends.
func (l *eventLog) stream(ctx context.Context, follow bool, done func()) <-chan ctl.Event {
	l.mu.Lock()
	hist := l.historyLocked()
	var live chan ctl.Event
	if follow {
		live = make(chan ctl.Event, followerBuffer)
		l.followers[live] = struct{}{}
	}
	l.mu.Unlock()

	out := make(chan ctl.Event)
	go func() {
		defer done()
		defer close(out)
		defer func() {
			if live != nil {
				l.mu.Lock()
				if _, ok := l.followers[live]; ok {
					delete(l.followers, live)
					close(live)
				}
				l.mu.Unlock()
			}
		}()
		for _, ev := range hist {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
		if live == nil {
			return
		}
		for {
			select {
			case ev, ok := <-live:
				if !ok {
					return
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
