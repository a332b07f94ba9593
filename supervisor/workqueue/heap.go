package workqueue

// waitEntry is a delayed key. index is its position in the heap, kept up to
// date by swaps, so re-adding a waiting key can move it in O(log n).
type waitEntry[T comparable] struct {
	key   T
	ready int64 // ready time, ns since the queue's base time
	index int
}

// delayHeap is a binary min-heap on ready time alone. Sift-up and sift-down
// are the textbook ones with a strict less, so entries with equal ready times
// come out in the same order as from client-go's container/heap-based queue;
// the conformance tests rely on that.
type delayHeap[T comparable] []*waitEntry[T]

func (h delayHeap[T]) less(i, j int) bool { return h[i].ready < h[j].ready }

func (h delayHeap[T]) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *delayHeap[T]) push(e *waitEntry[T]) {
	e.index = len(*h)
	*h = append(*h, e)
	h.up(e.index)
}

// popMin removes and returns the entry with the earliest ready time.
func (h *delayHeap[T]) popMin() *waitEntry[T] {
	old := *h
	n := len(old) - 1
	old.swap(0, n)
	old.down(0, n)
	e := old[n]
	old[n] = nil
	*h = old[:n]
	e.index = -1
	return e
}

// fix restores the heap after the entry at i changed its ready time.
func (h delayHeap[T]) fix(i int) {
	if !h.down(i, len(h)) {
		h.up(i)
	}
}

func (h delayHeap[T]) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			return
		}
		h.swap(i, j)
		j = i
	}
}

// down sifts the entry at i0 towards the leaves of h[:n]; it reports
// whether the entry moved.
func (h delayHeap[T]) down(i0, n int) bool {
	i := i0
	for {
		l := 2*i + 1
		if l >= n || l < 0 { // l < 0: int overflow
			break
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
