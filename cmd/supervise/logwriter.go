package main

import (
	"io"
	"sync"
)

// queuedWriter is supervise's own stderr: the supervisor logs its state
// changes while it holds its lock, and a slow reader of stderr (a
// container runtime's log driver, a full pipe) must not stall it there.
// Records are queued in memory and one goroutine writes them, as many as
// have gathered per write. A Write blocks only while more than max bytes
// wait (backpressure: a line is never dropped). Close writes what is
// queued and stops the goroutine; later writes go straight through.
type queuedWriter struct {
	w   io.Writer
	max int

	mu      sync.Mutex
	changed *sync.Cond // data queued, queue drained, or closed
	queue   []byte
	spare   []byte
	writing bool // a batch taken from the queue is being written
	closed  bool
	done    chan struct{}
}

func newQueuedWriter(w io.Writer, max int) *queuedWriter {
	q := &queuedWriter{w: w, max: max, done: make(chan struct{})}
	q.changed = sync.NewCond(&q.mu)
	go q.run()
	return q
}

// Write queues a copy of p. It never fails: an error of the underlying
// writer cannot be reported to the caller that queued the record.
func (q *queuedWriter) Write(p []byte) (int, error) {
	q.mu.Lock()
	for len(q.queue) >= q.max && !q.closed {
		q.changed.Wait()
	}
	if q.closed {
		q.mu.Unlock()
		return q.w.Write(p)
	}
	q.queue = append(q.queue, p...)
	q.changed.Broadcast()
	q.mu.Unlock()
	return len(p), nil
}

func (q *queuedWriter) run() {
	defer close(q.done)
	q.mu.Lock()
	for {
		for len(q.queue) == 0 && !q.closed {
			q.changed.Wait()
		}
		if len(q.queue) == 0 { // closed and drained
			q.mu.Unlock()
			return
		}
		batch := q.queue
		q.queue, q.spare = q.spare[:0], nil
		q.writing = true
		// The queue has room again: writers held back by a full one go on
		// while this batch is written, not only after.
		q.changed.Broadcast()
		q.mu.Unlock()
		_, _ = q.w.Write(batch)
		q.mu.Lock()
		q.writing = false
		if cap(batch) <= 4*q.max { // one huge record must not stay allocated
			q.spare = batch
		}
		q.changed.Broadcast()
	}
}

// Flush returns once what was queued before it is written: before an
// upgrade's exec, which would drop a queue in memory.
func (q *queuedWriter) Flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for (len(q.queue) > 0 || q.writing) && !q.closed {
		q.changed.Wait()
	}
}

// Close writes what is queued and returns once it is written.
func (q *queuedWriter) Close() error {
	q.mu.Lock()
	q.closed = true
	q.changed.Broadcast()
	q.mu.Unlock()
	<-q.done
	return nil
}
