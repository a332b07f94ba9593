package workqueue

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/clock/fakeclock"
)

// model is the queue's contract written the slow, obvious way. Keys that
// become ready at the same instant form a group whose order is not part of
// the contract (it is the heap's), so Get may return any key of the first
// group.
type model struct {
	now        int64 // seconds
	dirty      map[string]bool
	processing map[string]bool
	fifo       [][]string
	waiting    map[string]int64
	failures   map[string]int
	shut       bool
}

func newModel() *model {
	return &model{dirty: map[string]bool{}, processing: map[string]bool{}, waiting: map[string]int64{}, failures: map[string]int{}}
}

func (m *model) len() int {
	n := 0
	for _, g := range m.fifo {
		n += len(g)
	}
	return n
}

// mark is Add without deciding where a newly queued key goes.
func (m *model) mark(k string) (queue bool) {
	if m.shut || m.dirty[k] {
		return false
	}
	m.dirty[k] = true
	return !m.processing[k]
}

func (m *model) add(k string) {
	if m.mark(k) {
		m.fifo = append(m.fifo, []string{k})
	}
}

func (m *model) addAfter(k string, secs int64) {
	if m.shut {
		return
	}
	if secs <= 0 {
		m.add(k)
		return
	}
	if r, ok := m.waiting[k]; !ok || m.now+secs < r {
		m.waiting[k] = m.now + secs
	}
}

func (m *model) step(secs int64) {
	m.now += secs
	var due []string
	for k, r := range m.waiting {
		if r <= m.now {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b string) int { return cmp.Compare(m.waiting[a], m.waiting[b]) })
	for i := 0; i < len(due); {
		j := i
		var group []string
		for ; j < len(due) && m.waiting[due[j]] == m.waiting[due[i]]; j++ {
			if m.mark(due[j]) {
				group = append(group, due[j])
			}
		}
		for _, k := range due[i:j] {
			delete(m.waiting, k)
		}
		if len(group) > 0 {
			m.fifo = append(m.fifo, group)
		}
		i = j
	}
}

// get removes k from the first group; false if k is not there.
func (m *model) get(k string) bool {
	g := m.fifo[0]
	i := slices.Index(g, k)
	if i < 0 {
		return false
	}
	g = slices.Delete(g, i, i+1)
	if len(g) == 0 {
		m.fifo = m.fifo[1:]
	} else {
		m.fifo[0] = g
	}
	delete(m.dirty, k)
	m.processing[k] = true
	return true
}

func (m *model) done(k string) {
	delete(m.processing, k)
	if m.dirty[k] {
		m.fifo = append(m.fifo, []string{k})
	}
}

// runOps replays ops (two bytes each) on a real queue and on the model, and
// fails at the first difference.
func runOps(t *testing.T, ops []byte) {
	synctest.Test(t, func(t *testing.T) {
		clock := fakeclock.New(time.Unix(1e9, 0))
		q := New(Config[string]{Clock: clock, RateLimiter: backoff.NewItemExponential[string](time.Second, 8*time.Second)})
		defer q.ShutDown()
		m := newModel()
		var held []string
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%10, int(ops[i+1])
			k := strconv.Itoa(arg % 8)
			switch op {
			case 0, 1:
				q.Add(k)
				m.add(k)
			case 2:
				secs := int64(arg/8) % 6
				q.AddAfter(k, time.Duration(secs)*time.Second)
				m.addAfter(k, secs)
			case 3:
				q.AddRateLimited(k)
				n := m.failures[k]
				m.failures[k]++
				m.addAfter(k, min(int64(1)<<min(n, 10), 8))
			case 4:
				q.Forget(k)
				delete(m.failures, k)
			case 5, 6:
				if m.len() == 0 {
					continue
				}
				got, shutdown := q.Get()
				if shutdown {
					t.Fatalf("op %d: Get reported shutdown with %d keys in the model", i/2, m.len())
				}
				if !m.get(got) {
					t.Fatalf("op %d: Get = %q, model's next group is %v", i/2, got, m.fifo[0])
				}
				if slices.Contains(held, got) {
					t.Fatalf("op %d: %q handed out while held", i/2, got)
				}
				held = append(held, got)
			case 7:
				if len(held) == 0 {
					continue
				}
				j := arg % len(held)
				q.Done(held[j])
				m.done(held[j])
				held = slices.Delete(held, j, j+1)
			case 8:
				secs := int64(arg % 4)
				clock.Step(time.Duration(secs) * time.Second)
				m.step(secs)
			case 9:
				if arg%16 == 0 { // rare: shut down and finish the sequence on the drained side
					q.ShutDown()
					m.shut = true
					m.waiting = map[string]int64{}
				}
			}
			synctest.Wait() // let the waiting loop settle before comparing
			if got, want := q.Len(), m.len(); got != want {
				t.Fatalf("op %d (%d %d): Len = %d, model %d %v", i/2, op, arg, got, want, m.fifo)
			}
			if got, want := q.Stats().Waiting, len(m.waiting); got != want {
				t.Fatalf("op %d: Waiting = %d, model %d", i/2, got, want)
			}
			if got, want := q.NumRequeues(k), m.failures[k]; got != want {
				t.Fatalf("op %d: NumRequeues(%s) = %d, model %d", i/2, k, got, want)
			}
		}
		// Whatever is queued comes out, then shutdown.
		for _, k := range held {
			q.Done(k)
			m.done(k)
		}
		q.ShutDown()
		for m.len() > 0 {
			got, shutdown := q.Get()
			if shutdown || !m.get(got) {
				t.Fatalf("draining: Get = %q, %v; model %v", got, shutdown, m.fifo)
			}
			q.Done(got)
			m.done(got)
		}
		if _, shutdown := q.Get(); !shutdown {
			t.Fatal("Get after the drain did not report shutdown")
		}
	})
}

func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1, 5, 0, 0, 1, 7, 0, 5, 0})
	f.Add([]byte{2, 81, 2, 17, 8, 3, 8, 3, 5, 0, 5, 0, 7, 0, 7, 0})
	f.Add([]byte{3, 1, 3, 1, 8, 1, 5, 0, 3, 1, 7, 0, 8, 3, 5, 0, 4, 1, 9, 0, 5, 0})
	f.Fuzz(runOps)
}

// TestQueueAgainstModel runs thousands of seeded random sequences through
// the same check as FuzzQueue, so plain `go test` covers it.
func TestQueueAgainstModel(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	r := rand.New(rand.NewPCG(4, 2))
	for seed := range n {
		ops := make([]byte, 2*(10+r.IntN(150)))
		for i := range ops {
			ops[i] = byte(r.UintN(256))
		}
		t.Run(strconv.Itoa(seed), func(t *testing.T) { runOps(t, ops) })
		if t.Failed() {
			t.Logf("ops: %v", ops)
			return
		}
	}
}
