package workqueue

import (
	"sync"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/clock"
)

// Config configures a Queue. Every field is optional.
type Config[T comparable] struct {
	// Name identifies the queue in Stats.
	Name string
	// Clock drives delays and the latency counters; nil: clock.Real{}.
	Clock clock.Clock
	// RateLimiter decides AddRateLimited's delays; nil:
	// backoff.DefaultControllerRateLimiter on Clock.
	RateLimiter backoff.RateLimiter[T]
}

// Key states, as bits of keyState.flags.
const (
	dirty      uint8 = 1 << iota // needs processing: queued, or marked while held
	processing                   // held by a worker between Get and Done
)

type keyState struct {
	flags uint8
	since int64 // processing: when Get handed the key out
}

type queued[T comparable] struct {
	key   T
	added int64 // when it became dirty, for the latency counters
}

// Queue is a deduplicating, delaying, rate-limited work queue. Build it with
// New; see the package documentation for the contract.
type Queue[T comparable] struct {
	name    string
	clock   clock.Clock
	limiter backoff.RateLimiter[T]
	base    time.Time    // ready times and counters are ns since base (monotonic with clock.Real)
	now     func() int64 // the clock's time as ns since base

	mu         sync.Mutex
	hasItem    sync.Cond           // on mu; signalled when fifo gains a key or shutdown starts
	idle       sync.Cond           // on mu; broadcast when a drain may be finished
	keys       map[T]keyState      // guarded by mu; dirty or processing keys only
	fifo       ring[queued[T]]     // guarded by mu; dirty, not processing, in order
	waiting    delayHeap[T]        // guarded by mu
	waitingBy  map[T]*waitEntry[T] // guarded by mu; the heap's entries by key
	armed      int64               // guarded by mu; the ready time the waiting loop's timer is set for, 0 none (tests on a fake clock wait for it)
	free       []*waitEntry[T]     // guarded by mu; recycled heap entries
	processing int                 // guarded by mu; keys held by workers
	shutting   bool                // guarded by mu
	draining   bool                // guarded by mu
	stats      counters            // guarded by mu

	wake     chan struct{} // capacity 1: a new earliest ready time
	stop     chan struct{} // closed once by the first ShutDown
	stopOnce sync.Once
	loopDone chan struct{} // closed when the waiting loop has returned
}

type counters struct {
	adds, retries, gets uint64
	latencySum          int64
	lastLatency         int64
	queueTime, workTime Histogram
}

// New returns a running queue. Its waiting loop runs until ShutDown or
// ShutDownWithDrain, one of which must be called.
func New[T comparable](cfg Config[T]) *Queue[T] {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.RateLimiter == nil {
		cfg.RateLimiter = backoff.DefaultControllerRateLimiter[T](cfg.Clock)
	}
	q := &Queue[T]{
		name:      cfg.Name,
		clock:     cfg.Clock,
		limiter:   cfg.RateLimiter,
		base:      cfg.Clock.Now(),
		keys:      map[T]keyState{},
		waitingBy: map[T]*waitEntry[T]{},
		wake:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		loopDone:  make(chan struct{}),
	}
	q.now = func() int64 { return int64(q.clock.Now().Sub(q.base)) }
	if _, ok := cfg.Clock.(clock.Real); ok {
		// time.Since on a monotonic base reads only the monotonic clock: half
		// the cost of time.Now, on the Add/Get hot path.
		q.now = func() int64 { return int64(time.Since(q.base)) }
	}
	q.hasItem.L = &q.mu
	q.idle.L = &q.mu
	go q.waitingLoop()
	return q
}

// Add marks key as needing processing. A key already queued is not queued
// again; a key held by a worker is queued again when the worker calls Done.
// After ShutDown, Add does nothing.
func (q *Queue[T]) Add(key T) {
	q.mu.Lock()
	if !q.shutting {
		q.addLocked(key)
	}
	q.mu.Unlock()
}

func (q *Queue[T]) addLocked(key T) {
	st := q.keys[key]
	if st.flags&dirty != 0 {
		return
	}
	q.stats.adds++
	if st.flags&processing != 0 {
		// Held: mark it, and Done queues it.
		q.keys[key] = keyState{flags: dirty | processing, since: st.since}
		return
	}
	q.keys[key] = keyState{flags: dirty}
	q.fifo.push(queued[T]{key: key, added: q.now()})
	q.hasItem.Signal()
}

// Get blocks until a key is ready and hands it to the caller, who holds it
// until Done. shutdown is true, and key the zero value, once the queue is
// shutting down and empty: the caller's worker should return.
func (q *Queue[T]) Get() (key T, shutdown bool) {
	now := q.now() // read before locking, to hold the lock for less time
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.fifo.len() == 0 && !q.shutting {
		q.hasItem.Wait()
		now = -1
	}
	if q.fifo.len() == 0 {
		return key, true
	}
	if now < 0 { // waited: the time read before is stale
		now = q.now()
	}
	e := q.fifo.pop()
	lat := now - e.added
	q.stats.gets++
	q.stats.latencySum += lat
	q.stats.lastLatency = lat
	q.stats.queueTime.observe(time.Duration(lat))
	q.keys[e.key] = keyState{flags: processing, since: now}
	q.processing++
	return e.key, false
}

// Done releases key, which the caller got from Get. If key was added again
// meanwhile, it goes to the back of the queue now. Done on a key the caller
// does not hold does nothing.
func (q *Queue[T]) Done(key T) {
	now := q.now() // read before locking, to hold the lock for less time
	q.mu.Lock()
	defer q.mu.Unlock()
	st, ok := q.keys[key]
	if !ok || st.flags&processing == 0 {
		return
	}
	q.processing--
	q.stats.workTime.observe(time.Duration(now - st.since))
	if st.flags&dirty != 0 {
		q.keys[key] = keyState{flags: dirty}
		// Its queue latency counts from now, when it became ready again.
		q.fifo.push(queued[T]{key: key, added: now})
		q.hasItem.Signal()
	} else {
		delete(q.keys, key)
	}
	if q.draining && q.processing == 0 && q.fifo.len() == 0 {
		q.idle.Broadcast()
	}
}

// AddAfter adds key once d has passed; d ≤ 0 adds it now. A key already
// waiting keeps the earlier of its two ready times. Each call counts as a
// retry in Stats. After ShutDown, AddAfter does nothing.
func (q *Queue[T]) AddAfter(key T, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutting {
		return
	}
	q.stats.retries++
	if d <= 0 {
		q.addLocked(key)
		return
	}
	ready := satAdd(q.now(), int64(d))
	if e, ok := q.waitingBy[key]; ok {
		if ready < e.ready {
			e.ready = ready
			q.waiting.fix(e.index)
			if e.index == 0 {
				q.wakeLoop()
			}
		}
		return
	}
	e := q.newEntry()
	e.key, e.ready = key, ready
	q.waiting.push(e)
	q.waitingBy[key] = e
	if e.index == 0 {
		q.wakeLoop()
	}
}

// satAdd adds without wrapping past the largest int64.
func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return 1<<63 - 1
}

// wakeLoop tells the waiting loop that the earliest ready time changed.
func (q *Queue[T]) wakeLoop() {
	select {
	case q.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// newEntry takes a heap entry from the free list, or allocates a block of
// them, so a steady stream of AddAfter allocates almost nothing.
func (q *Queue[T]) newEntry() *waitEntry[T] {
	if len(q.free) == 0 {
		block := make([]waitEntry[T], 64)
		for i := range block {
			q.free = append(q.free, &block[i])
		}
	}
	e := q.free[len(q.free)-1]
	q.free[len(q.free)-1] = nil
	q.free = q.free[:len(q.free)-1]
	return e
}

// maxFree bounds the entries kept for reuse once the heap has emptied.
const maxFree = 4096

// AddRateLimited adds key after the rate limiter's delay for it.
func (q *Queue[T]) AddRateLimited(key T) {
	q.AddAfter(key, q.limiter.When(key))
}

// Forget clears the rate limiter's failure history for key; call it when key
// was processed successfully. It does not remove key from the queue.
func (q *Queue[T]) Forget(key T) { q.limiter.Forget(key) }

// NumRequeues returns how many times key has been rate-limited since its
// last Forget.
func (q *Queue[T]) NumRequeues(key T) int { return q.limiter.NumRequeues(key) }

// Len returns the number of keys ready for Get. It is informational: do not
// gate Add or Get on it.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.fifo.len()
}

// waitingLoop moves delayed keys to the queue when they are ready. It is
// the queue's one goroutine; ShutDown stops it and waits for it.
func (q *Queue[T]) waitingLoop() {
	defer close(q.loopDone)
	var timer clock.Timer
	for {
		q.mu.Lock()
		now := q.now()
		for len(q.waiting) > 0 && q.waiting[0].ready <= now {
			e := q.waiting.popMin()
			delete(q.waitingBy, e.key)
			if !q.shutting {
				q.addLocked(e.key)
			}
			q.recycle(e)
		}
		var next <-chan time.Time
		q.armed = 0
		if len(q.waiting) > 0 {
			d := time.Duration(q.waiting[0].ready - now)
			if timer == nil {
				timer = q.clock.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			next = timer.C()
			q.armed = q.waiting[0].ready
		} else if timer != nil {
			timer.Stop()
		}
		q.mu.Unlock()

		select {
		case <-q.stop:
			if timer != nil {
				timer.Stop()
			}
			return
		case <-q.wake:
		case <-next:
		}
	}
}

func (q *Queue[T]) recycle(e *waitEntry[T]) {
	var zero T
	e.key = zero
	if len(q.waiting) == 0 && len(q.free) >= maxFree {
		clear(q.free[maxFree:])
		q.free = q.free[:maxFree]
		return
	}
	q.free = append(q.free, e)
}

// ShutDown stops intake: later Add and AddAfter calls are ignored and
// delayed keys are dropped. Get hands out the keys already queued, then
// reports shutdown. ShutDown returns once the waiting loop has stopped; it
// does not wait for workers. It may be called more than once, and ends a
// ShutDownWithDrain's wait.
func (q *Queue[T]) ShutDown() {
	q.mu.Lock()
	q.shutting = true
	q.draining = false
	q.hasItem.Broadcast()
	q.idle.Broadcast()
	q.mu.Unlock()
	q.stopLoop()
}

// ShutDownWithDrain is ShutDown, and then waits until every queued key has
// been handed out and every held key is Done. Workers must keep calling Get
// until it reports shutdown, and call Done on what they hold, or this blocks
// until a ShutDown call ends the wait.
func (q *Queue[T]) ShutDownWithDrain() {
	q.mu.Lock()
	q.shutting = true
	q.draining = true
	q.hasItem.Broadcast()
	q.mu.Unlock()
	q.stopLoop()

	q.mu.Lock()
	defer q.mu.Unlock()
	for q.draining && (q.processing > 0 || q.fifo.len() > 0) {
		q.idle.Wait()
	}
}

func (q *Queue[T]) stopLoop() {
	q.stopOnce.Do(func() { close(q.stop) })
	<-q.loopDone
	q.mu.Lock()
	for _, e := range q.waiting {
		delete(q.waitingBy, e.key)
	}
	clear(q.waiting)
	q.waiting = q.waiting[:0]
	q.mu.Unlock()
}

// ShuttingDown reports whether ShutDown or ShutDownWithDrain has been called.
func (q *Queue[T]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shutting
}

// Stats is a snapshot of a queue's counters.
type Stats struct {
	Name           string
	Depth          int           // keys ready for Get (Len)
	Waiting        int           // keys delayed by AddAfter or AddRateLimited
	Processing     int           // keys held by workers
	Adds           uint64        // keys that became pending (adds of a pending key not counted)
	Retries        uint64        // AddAfter and AddRateLimited calls
	Gets           uint64        // keys handed out
	LongestRunning time.Duration // how long the longest-held key has been held so far
	UnfinishedWork time.Duration // how long the held keys have been held so far, summed
	LastLatency    time.Duration // time the latest Get's key waited ready in the queue
	MeanLatency    time.Duration // mean time keys waited ready in the queue, over all Gets
	// QueueTime: how long keys waited ready in the queue, per Get;
	// WorkTime: how long workers held them, per Done.
	QueueTime, WorkTime Histogram
}

// Stats returns the queue's counters. It scans the held keys, so it is meant
// for a status page, not a hot path.
func (q *Queue[T]) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := Stats{
		Name:        q.name,
		Depth:       q.fifo.len(),
		Waiting:     len(q.waiting),
		Processing:  q.processing,
		Adds:        q.stats.adds,
		Retries:     q.stats.retries,
		Gets:        q.stats.gets,
		LastLatency: time.Duration(q.stats.lastLatency),
		QueueTime:   q.stats.queueTime,
		WorkTime:    q.stats.workTime,
	}
	if q.stats.gets > 0 {
		s.MeanLatency = time.Duration(q.stats.latencySum / int64(q.stats.gets))
	}
	if q.processing > 0 {
		now := q.now()
		for _, st := range q.keys {
			if st.flags&processing != 0 {
				held := time.Duration(now - st.since)
				s.LongestRunning = max(s.LongestRunning, held)
				s.UnfinishedWork += held
			}
		}
	}
	return s
}
