package logs

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// Defaults of RingConfig.
const (
	DefaultRingSize     = 1000
	DefaultRingBytes    = 256 << 10
	DefaultFollowBuffer = 1000
)

// lineOverhead is what a held line costs besides its text (the Line
// value), counted so that a flood of empty lines is bounded too.
const lineOverhead = int(unsafe.Sizeof(Line{}))

// RingConfig configures a Ring. Zero fields get defaults.
type RingConfig struct {
	// Program names the program in the lag marker.
	Program string
	// Size is how many lines the ring keeps; default DefaultRingSize.
	Size int
	// MaxBytes bounds the memory the kept lines take (texts plus a small
	// overhead per line); the oldest lines go first. The newest line is
	// always kept. Default DefaultRingBytes. A follower's queue is bounded
	// by the same figure.
	MaxBytes int
	// FollowBuffer is how many new lines a follower may fall behind before
	// it is ended with a lag marker; default DefaultFollowBuffer.
	FollowBuffer int
	// Now stamps lag markers; default time.Now.
	Now func() time.Time
}

// Ring is a sink keeping the last lines of one program, across the runs of
// its processes, for `supervisectl logs` and its followers. WriteLine never
// blocks on a follower: each follower has a bounded queue and a goroutine
// of its own that feeds its channel.
type Ring struct {
	cfg RingConfig

	mu        sync.Mutex
	lines     []Line                 // circular; guarded by mu
	head      int                    // index of the oldest line; guarded by mu
	n         int                    // lines held; guarded by mu
	bytes     int                    // cost of the held lines; guarded by mu
	followers map[*follower]struct{} // guarded by mu
	watchers  map[*watcher]struct{}  // guarded by mu
	closed    bool                   // guarded by mu
	// written counts every line ever taken, kept or not, so that a mark
	// taken at a run's end tells its lines from the next run's.
	written uint64 // guarded by mu
	// pending are chunks not yet cut into lines, newest last: a fast
	// writer's reads are kept as they came, and cut only when someone
	// reads the ring (or follows it), and then only as far as the ring
	// keeps. Older ones go as soon as the newer cover Size and MaxBytes.
	pending      []pendingChunk // guarded by mu
	pendBuf      []byte         // the pending chunks' bytes; guarded by mu
	pendingLines int            // lines in pending; guarded by mu
	pendingCost  int            // their cost (texts and overhead); guarded by mu
	wg           sync.WaitGroup // follower goroutines
}

// NewRing returns an empty ring.
func NewRing(cfg RingConfig) *Ring {
	if cfg.Size <= 0 {
		cfg.Size = DefaultRingSize
	}
	if cfg.FollowBuffer <= 0 {
		cfg.FollowBuffer = DefaultFollowBuffer
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultRingBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Ring{cfg: cfg, followers: make(map[*follower]struct{})}
}

func lineCost(l Line) int { return len(l.Text) + lineOverhead }

// WriteLine stores l, dropping the oldest lines while more than Size lines
// or MaxBytes are held, and queues it to every follower. It never blocks
// on a follower and never fails.
func (r *Ring) WriteLine(l Line) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settleLocked()
	r.written++
	r.addLocked(l)
	return nil
}

// pendingChunk is a chunk kept whole in the ring: its lines are
// pendBuf[off:off+n].
type pendingChunk struct {
	program, stream string
	time            time.Time
	off, n          int
	lines, cost     int
}

// WriteChunk stores the lines of c as WriteLine would. With no follower it
// copies c whole into a buffer the ring reuses, and cuts it into lines only
// when the ring is read: a fast writer's chunks that newer ones replace
// are never cut, and cost no allocation.
func (r *Ring) WriteChunk(c *Chunk) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.followers) > 0 {
		r.settleLocked()
		return c.EachLine(func(l Line) error { r.written++; r.addLocked(l); return nil })
	}
	lines := c.lines
	if lines == 0 { // not counted by a pump
		lines = bytes.Count(c.Data, newline)
	}
	if lines == 0 {
		return nil
	}
	r.written += uint64(lines)
	if len(r.watchers) > 0 {
		r.watchChunkLocked(c)
	}
	r.reserveLocked(len(c.Data))
	pc := pendingChunk{program: c.Program, stream: c.Stream, time: c.Time,
		off: len(r.pendBuf), n: len(c.Data), lines: lines, cost: len(c.Data) - lines + lines*lineOverhead}
	r.pendBuf = append(r.pendBuf, c.Data...)
	r.pending = append(r.pending, pc)
	r.pendingLines += lines
	r.pendingCost += pc.cost
	// Drop the oldest while the rest alone fill the ring.
	for len(r.pending) > 1 {
		old := r.pending[0]
		if r.pendingLines-old.lines < r.cfg.Size && r.pendingCost-old.cost < r.cfg.MaxBytes {
			break
		}
		r.pending = append(r.pending[:0], r.pending[1:]...)
		r.pendingLines -= old.lines
		r.pendingCost -= old.cost
	}
	return nil
}

// reserveLocked makes room for n more bytes in pendBuf, moving what the
// pending chunks still use to its front (or to a larger buffer) when the
// end is reached. What is live is at most the ring's bound and a chunk, so
// the buffer stays near twice that.
func (r *Ring) reserveLocked(n int) {
	if len(r.pendBuf)+n <= cap(r.pendBuf) {
		return
	}
	start := len(r.pendBuf)
	if len(r.pending) > 0 {
		start = r.pending[0].off
	}
	live := r.pendBuf[start:]
	buf := r.pendBuf
	if len(live)+n > cap(buf)/2 { // too full to be worth keeping
		buf = make([]byte, 0, 2*(len(live)+n))
	}
	buf = append(buf[:0], live...) // copy within buf is a safe overlapping move
	for i := range r.pending {
		r.pending[i].off -= start
	}
	r.pendBuf = buf
}

// settleLocked cuts the pending chunks into lines, in order, as far as the
// ring keeps them: when they alone fill it, what it held goes first, and
// only their last lines are looked at. The texts are copied out of the
// buffer, one string per chunk.
func (r *Ring) settleLocked() {
	if len(r.pending) == 0 {
		return
	}
	skip := 0 // lines of the oldest pending chunk that would go at once
	if r.pendingLines >= r.cfg.Size || r.pendingCost >= r.cfg.MaxBytes {
		for r.n > 0 { // all of it would be pushed out
			r.lines[r.head] = Line{}
			r.head = (r.head + 1) % len(r.lines)
			r.n--
		}
		r.bytes = 0
		skip = max(r.pendingLines-r.cfg.Size, 0)
	}
	for i, p := range r.pending {
		data := r.pendBuf[p.off : p.off+p.n]
		if i == 0 {
			for range skip {
				data = data[bytes.IndexByte(data, '\n')+1:]
			}
		}
		c := &Chunk{Program: p.program, Stream: p.stream, Time: p.time, Data: data}
		_ = c.EachLine(func(l Line) error { r.addLocked(l); return nil })
	}
	r.pending = r.pending[:0]
	r.pendBuf = r.pendBuf[:0]
	r.pendingLines, r.pendingCost = 0, 0
}

func (r *Ring) addLocked(l Line) {
	switch {
	case r.n < len(r.lines):
		r.lines[(r.head+r.n)%len(r.lines)] = l
		r.n++
	case len(r.lines) < r.cfg.Size:
		// Grow with the lines, so that an idle program's ring costs
		// nothing; in order first when the bytes bound wrapped it.
		if r.head != 0 {
			r.lines = r.lastLocked(-1)
			r.head = 0
		}
		r.lines = append(r.lines, l)
		r.n++
	default:
		r.bytes -= lineCost(r.lines[r.head])
		r.lines[r.head] = l
		r.head = (r.head + 1) % len(r.lines)
	}
	r.bytes += lineCost(l)
	r.trimLocked()
	for f := range r.followers {
		f.pushLocked(l)
	}
	for w := range r.watchers {
		w.lineLocked(r, l.Time, l.Text)
	}
}

// LineTest is what Watch tests lines with.
type LineTest interface {
	Match(text string) bool
}

// LineTestFunc is a function as a LineTest.
type LineTestFunc func(text string) bool

// Match returns f(text).
func (f LineTestFunc) Match(text string) bool { return f(text) }

// literaler is a LineTest that knows a string every line it passes
// contains: Watch skips a chunk's lines without it unread, finding the
// others with one scan of the chunk.
type literaler interface {
	Literal() string
}

// watcher is a Watch: a test of each new line, until one passes.
type watcher struct {
	since time.Time
	test  LineTest
	lit   []byte // in every line test passes; nil when not known
	found func()
}

func (w *watcher) lineLocked(r *Ring, t time.Time, text string) {
	if !t.Before(w.since) && w.test.Match(text) {
		delete(r.watchers, w)
		w.found()
	}
}

// watchChunkLocked offers the lines of c to each watcher in turn.
func (r *Ring) watchChunkLocked(c *Chunk) {
	for w := range r.watchers {
		if !c.Time.Before(w.since) && w.anyLine(c.Data) {
			delete(r.watchers, w)
			w.found()
		}
	}
}

// anyLine reports whether a line of data passes w's test. The lines are
// tested where they are, without a copy: a test reads a line only during
// its call. With a literal, only the lines holding it are tested.
func (w *watcher) anyLine(data []byte) bool {
	for len(data) > 0 {
		if len(w.lit) > 0 {
			k := bytes.Index(data, w.lit)
			if k < 0 {
				return false
			}
			data = data[bytes.LastIndexByte(data[:k], '\n')+1:]
		}
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			i = len(data)
		}
		if w.test.Match(unsafe.String(unsafe.SliceData(data), i)) {
			return true
		}
		data = data[min(i+1, len(data)):]
	}
	return false
}

// Watch tests each line the ring holds or takes from now on whose time is
// not before since, until one passes; then found runs, once. Unlike a
// follower, a watcher never falls behind and costs no goroutine: the test
// runs on the writer's goroutine, under the ring's lock, with a text valid
// only during the call, and found must not block (close a channel). A test
// with a Literal() string method is given only the lines that hold that
// string. cancel ends the watch; it is safe after found and more than once.
func (r *Ring) Watch(since time.Time, test LineTest, found func()) (cancel func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settleLocked()
	for i := range r.n {
		l := r.lines[(r.head+i)%len(r.lines)]
		if !l.Time.Before(since) && test.Match(l.Text) {
			found()
			return func() {}
		}
	}
	if r.closed {
		return func() {}
	}
	w := &watcher{since: since, test: test, found: found}
	if l, ok := test.(literaler); ok && l.Literal() != "" {
		w.lit = []byte(l.Literal())
	}
	if r.watchers == nil {
		r.watchers = map[*watcher]struct{}{}
	}
	r.watchers[w] = struct{}{}
	return func() {
		r.mu.Lock()
		delete(r.watchers, w)
		r.mu.Unlock()
	}
}

func (r *Ring) trimLocked() {
	for r.n > 1 && r.bytes > r.cfg.MaxBytes {
		r.bytes -= lineCost(r.lines[r.head])
		r.lines[r.head] = Line{} // let the text go now
		r.head = (r.head + 1) % len(r.lines)
		r.n--
	}
}

// SetMaxBytes changes the bound on the bytes held (0 for the default),
// dropping the oldest lines at once when they no longer fit.
func (r *Ring) SetMaxBytes(n int) {
	if n <= 0 {
		n = DefaultRingBytes
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settleLocked()
	r.cfg.MaxBytes = n
	r.trimLocked()
}

// Last returns a copy of the last n lines held, oldest first; all of them
// when n < 0 or n is more than the ring holds.
func (r *Ring) Last(n int) []Line {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settleLocked()
	return r.lastLocked(n)
}

// Mark returns the count of lines the ring has taken so far: Since(mark)
// returns the lines taken after it.
func (r *Ring) Mark() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written
}

// Since returns a copy of the lines taken after mark that the ring still
// holds, oldest first, and the mark of its end (for the next Since).
func (r *Ring) Since(mark uint64) (lines []Line, end uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settleLocked()
	if mark >= r.written {
		return nil, r.written
	}
	return r.lastLocked(int(min(r.written-mark, uint64(r.n)))), r.written
}

func (r *Ring) lastLocked(n int) []Line {
	if n < 0 || n > r.n {
		n = r.n
	}
	out := make([]Line, n)
	for i := range out {
		out[i] = r.lines[(r.head+r.n-n+i)%len(r.lines)]
	}
	return out
}

// Follow returns a channel carrying the last n lines (as Last(n)) and then
// every new line, with no gap and no repeat between the two. The channel
// closes when ctx ends, when cancel is called, when the ring is closed
// (after the lines queued until then), or when the follower falls behind:
// when FollowBuffer lines already wait for it (besides the batch it is
// being handed), a new line is skipped instead of queued; once the follower
// has received what was queued, it gets one line with Stream StreamLagged,
// and Text "follower lagged, N lines skipped", and the channel closes.
// Call cancel when done following.
func (r *Ring) Follow(ctx context.Context, n int) (lines <-chan Line, cancel func()) {
	ctx, cancel = context.WithCancel(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settleLocked()
	hist := r.lastLocked(n)
	f := &follower{
		out:      make(chan Line),
		wake:     make(chan struct{}, 1),
		limit:    r.cfg.FollowBuffer + len(hist),
		maxBytes: r.cfg.MaxBytes + costOf(hist),
		queue:    hist,
		ended:    r.closed,
	}
	if !r.closed {
		r.followers[f] = struct{}{}
	}
	r.wg.Go(func() { r.feed(ctx, f) })
	return f.out, cancel
}

// Close ends every follower once it has received the lines queued for it.
// The ring still keeps lines written after Close, but has no followers.
func (r *Ring) Close() {
	r.mu.Lock()
	r.closed = true
	clear(r.watchers)
	for f := range r.followers {
		f.ended = true
		f.signal()
		delete(r.followers, f)
	}
	r.mu.Unlock()
}

// Wait blocks until every follower goroutine has ended; call it after
// Close, or after cancelling every follower.
func (r *Ring) Wait() { r.wg.Wait() }

// follower is one Follow call's state.
type follower struct {
	out  chan Line
	wake chan struct{} // capacity 1: a line or an end is waiting

	// All guarded by the ring's mu.
	queue    []Line
	spare    []Line // the feeder's last batch, reused as the next queue
	limit    int    // lines the queue may hold
	bytes    int    // cost of the queued lines
	maxBytes int    // cost the queue may reach
	lagged   bool   // the queue overflowed; lines are counted, not queued
	skipped  int
	ended    bool // the ring was closed
}

func (f *follower) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *follower) pushLocked(l Line) {
	if f.lagged || len(f.queue) >= f.limit || f.bytes+lineCost(l) > f.maxBytes {
		f.lagged = true
		f.skipped++
		return
	}
	f.queue = append(f.queue, l)
	f.bytes += lineCost(l)
	f.signal()
}

// feed moves queued lines to the follower's channel, on the follower's own
// goroutine, so that only this goroutine ever waits for the reader.
func (r *Ring) feed(ctx context.Context, f *follower) {
	defer close(f.out)
	defer r.remove(f)
	for {
		r.mu.Lock()
		batch := f.queue
		f.queue, f.spare, f.bytes = f.spare[:0], nil, 0
		lagged, ended := f.lagged, f.ended
		var skipped int
		if len(batch) == 0 && lagged {
			// Caught up with what was queued: the count is final now.
			delete(r.followers, f)
			skipped = f.skipped
		}
		r.mu.Unlock()

		for _, l := range batch {
			select {
			case f.out <- l:
			case <-ctx.Done():
				return
			}
		}
		if len(batch) > 0 {
			clear(batch) // let the texts go
			r.mu.Lock()
			f.spare = batch[:0]
			r.mu.Unlock()
			continue
		}
		switch {
		case lagged:
			marker := Line{
				Program: r.cfg.Program,
				Stream:  StreamLagged,
				Time:    r.cfg.Now(),
				Text:    fmt.Sprintf("follower lagged, %d lines skipped", skipped),
			}
			select {
			case f.out <- marker:
			case <-ctx.Done():
			}
			return
		case ended:
			return
		}
		select {
		case <-f.wake:
		case <-ctx.Done():
			return
		}
	}
}

func costOf(lines []Line) int {
	n := 0
	for _, l := range lines {
		n += lineCost(l)
	}
	return n
}

func (r *Ring) remove(f *follower) {
	r.mu.Lock()
	delete(r.followers, f)
	r.mu.Unlock()
}
