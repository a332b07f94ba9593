package proc

import "sync"

// eventQueue is an unbounded FIFO of exit events in front of a channel: a
// slow consumer never blocks the runtime and no exit is dropped.
type eventQueue struct {
	out  chan ExitEvent
	kick chan struct{} // capacity 1: there is something in buf
	stop chan struct{}
	done chan struct{}

	mu  sync.Mutex
	buf []ExitEvent // guarded by mu
}

func newEventQueue() *eventQueue {
	q := &eventQueue{
		out:  make(chan ExitEvent),
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go q.run()
	return q
}

// push never blocks.
func (q *eventQueue) push(ev ExitEvent) {
	q.mu.Lock()
	q.buf = append(q.buf, ev)
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

func (q *eventQueue) run() {
	defer close(q.done)
	defer close(q.out)
	for {
		q.mu.Lock()
		var ev ExitEvent
		ok := len(q.buf) > 0
		if ok {
			ev = q.buf[0]
			q.buf[0] = ExitEvent{}
			q.buf = q.buf[1:]
		}
		q.mu.Unlock()
		if !ok {
			select {
			case <-q.kick:
				continue
			case <-q.stop:
				return
			}
		}
		select {
		case q.out <- ev:
		case <-q.stop:
			return
		}
	}
}

// close stops delivery and closes the channel; undelivered events are
// discarded (nobody is reading them).
func (q *eventQueue) close() {
	close(q.stop)
	<-q.done
}
