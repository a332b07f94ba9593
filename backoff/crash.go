package backoff

import (
	"sync"
	"time"

	"github.com/supervise-dev/supervise/clock"
)

// CrashConfig configures a Crash backoff. Zero durations take the kubelet's
// defaults, but for Initial: it is 0 (restart at once, every time) when Max
// is set, so that a backoff can be turned off; with Max unset too it is 10s.
type CrashConfig struct {
	Initial    time.Duration // first delay; default 10s when Max is 0 too
	Max        time.Duration // cap; default 5m
	ResetAfter time.Duration // a quiet period this long starts over; default 2 × Max
	Clock      clock.Clock   // default clock.Real{}
	// Jitter, when set, returns a fraction f (usually in [0, 1)); every step
	// adds f × the previous delay, as the kubelet's maxJitterFactor does.
	// Nil means no jitter.
	Jitter func() float64
}

// Crash is the kubelet's per-key crash backoff. Per key it keeps the current
// delay and the time of the last step (lastUpdate). A step doubles the delay
// up to Max, or starts over at Initial when the event came more than
// ResetAfter after the last step.
//
// Times of events (exits) are passed in: the backoff counts from when the
// process finished, not from when a worker got round to looking at it.
type Crash struct {
	initial, max, resetAfter time.Duration
	clock                    clock.Clock
	jitter                   func() float64

	mu      sync.Mutex
	entries map[string]crashEntry // guarded by mu
}

type crashEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

// NewCrash returns a Crash backoff with cfg's settings and no entries.
func NewCrash(cfg CrashConfig) *Crash {
	if cfg.Initial < 0 || cfg.Initial == 0 && cfg.Max <= 0 {
		cfg.Initial = 10 * time.Second
	}
	if cfg.Max <= 0 {
		cfg.Max = 5 * time.Minute
	}
	if cfg.ResetAfter <= 0 {
		cfg.ResetAfter = 2 * cfg.Max
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &Crash{
		initial:    cfg.Initial,
		max:        cfg.Max,
		resetAfter: cfg.ResetAfter,
		clock:      cfg.Clock,
		jitter:     cfg.Jitter,
		entries:    map[string]crashEntry{},
	}
}

// Decide applies the restart rule for key, whose process finished at
// finishedAt, at the clock's current time now:
//
//  1. no entry, or finishedAt − lastUpdate > ResetAfter: start now; the entry
//     becomes delay = Initial, lastUpdate = now; Decide returns 0;
//  2. else if now − finishedAt < delay: the key is in CrashLoopBackOff;
//     Decide returns finishedAt + delay − now (> 0), the exact time left, and
//     records nothing: the caller requeues the key after that long;
//  3. else start now; delay = min(2 × delay, Max), lastUpdate = now; Decide
//     returns 0.
//
// So 0 means "start now, and the step is recorded"; the caller must then
// start the process. With the defaults, quick crashes wait 0, 10, 20, 40, 80,
// 160, 300, 300 … s.
func (b *Crash) Decide(key string, finishedAt time.Time) (wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	if e, ok := b.entries[key]; ok && !b.expired(finishedAt, e.lastUpdate) {
		if left := e.delay - now.Sub(finishedAt); left > 0 {
			return left
		}
	}
	b.nextLocked(key, finishedAt, now)
	return 0
}

// Left is what Decide would return for key without recording anything:
// the time left of its backoff window counted from finishedAt, 0 when a
// start may come now.
func (b *Crash) Left(key string, finishedAt time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[key]; ok && !b.expired(finishedAt, e.lastUpdate) {
		if left := e.delay - b.clock.Now().Sub(finishedAt); left > 0 {
			return left
		}
	}
	return 0
}

// Next moves key to its next step: back to Initial when the key is new or
// eventTime came more than ResetAfter after the last step, else the delay
// doubles up to Max. lastUpdate becomes the clock's now.
func (b *Crash) Next(key string, eventTime time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextLocked(key, eventTime, b.clock.Now())
}

func (b *Crash) nextLocked(key string, eventTime, now time.Time) {
	e, ok := b.entries[key]
	if !ok || b.expired(eventTime, e.lastUpdate) {
		e.delay = b.initial + b.jitterOf(b.initial)
	} else {
		e.delay = min(2*e.delay+b.jitterOf(e.delay), b.max)
	}
	e.lastUpdate = now
	b.entries[key] = e
}

func (b *Crash) jitterOf(d time.Duration) time.Duration {
	if b.jitter == nil {
		return 0
	}
	return time.Duration(b.jitter() * float64(d))
}

// expired reports whether eventTime came long enough after the last step for
// the key to count as stable again.
func (b *Crash) expired(eventTime, lastUpdate time.Time) bool {
	return eventTime.Sub(lastUpdate) > b.resetAfter
}

// IsInBackOffSince reports whether key is still in its backoff window
// counted from eventTime (the exit): now − eventTime < delay. A key with no
// entry, or whose last step is more than ResetAfter before eventTime, is not.
func (b *Crash) IsInBackOffSince(key string, eventTime time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(eventTime, e.lastUpdate) {
		return false
	}
	return b.clock.Since(eventTime) < e.delay
}

// IsInBackOffSinceUpdate reports whether eventTime falls inside the backoff
// window counted from the last step: eventTime − lastUpdate < delay.
func (b *Crash) IsInBackOffSinceUpdate(key string, eventTime time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(eventTime, e.lastUpdate) {
		return false
	}
	return eventTime.Sub(e.lastUpdate) < e.delay
}

// Get returns key's current delay, 0 for a key with no entry.
func (b *Crash) Get(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.entries[key].delay
}

// Reset forgets key: its next exit restarts at once (a manual restart).
func (b *Crash) Reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// GC drops the entries whose last step is more than ResetAfter (default
// 2 × Max) before now: they would start over anyway. Call it periodically.
func (b *Crash) GC() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	for k, e := range b.entries {
		if b.expired(now, e.lastUpdate) {
			delete(b.entries, k)
		}
	}
}

// Len returns the number of keys with an entry.
func (b *Crash) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.entries)
}

// Step is where a key stands in its backoff: the delay of its window and
// when it was last moved. An upgrade in place carries it to the new
// binary (Entry, then Restore), so that a crash loop keeps its pace.
type Step struct {
	Delay      time.Duration `json:"delay"`
	LastUpdate time.Time     `json:"last_update"`
}

// Entry is key's step; ok is false when the key has none.
func (b *Crash) Entry(key string) (s Step, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	return Step{Delay: e.delay, LastUpdate: e.lastUpdate}, ok
}

// Restore sets key's step, its delay bounded to [0, Max].
func (b *Crash) Restore(key string, s Step) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.entries[key] = crashEntry{delay: min(max(s.Delay, 0), b.max), lastUpdate: s.LastUpdate}
}
