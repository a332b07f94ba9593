package soak

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// model is what the driver has asked for: the config it last wrote and,
// per program, whether it should have a process. Commands and reloads on
// one program are serialized by the program's lock, so the model is exact:
// a command that succeeded changed it, one that failed did not.
type model struct {
	mu     sync.Mutex
	base   map[string]*program // the intended config
	extras map[string]*program // what reloads may add
	cur    map[string]*program // the config last written
	want   map[string]bool     // should run: autostart, start/restart, not stop
	// touched is when a reload last added, removed or changed a program:
	// the status is given time to follow from then on.
	touched map[string]time.Time
	// removals counts the reloads that removed each program, for the
	// report of what leaked.
	removals map[string]int
	locks    map[string]*sync.Mutex
}

func newModel() *model {
	m := &model{
		base: basePrograms(), extras: extraPrograms(),
		want: map[string]bool{}, touched: map[string]time.Time{}, removals: map[string]int{}, locks: map[string]*sync.Mutex{},
	}
	m.cur = cloneAll(m.base)
	for n, p := range m.cur {
		m.want[n] = p.autostart
	}
	return m
}

func cloneAll(ps map[string]*program) map[string]*program {
	out := make(map[string]*program, len(ps))
	for n, p := range ps {
		out[n] = p.clone()
	}
	return out
}

// lock takes the program locks of names, in order (so two lockers of
// several names cannot deadlock), and returns the unlock.
func (m *model) lock(names ...string) func() {
	names = slices.Clone(names)
	sort.Strings(names)
	names = slices.Compact(names)
	m.mu.Lock()
	ls := make([]*sync.Mutex, len(names))
	for i, n := range names {
		if m.locks[n] == nil {
			m.locks[n] = &sync.Mutex{}
		}
		ls[i] = m.locks[n]
	}
	m.mu.Unlock()
	for _, l := range ls {
		l.Lock()
	}
	return func() {
		for _, l := range ls {
			l.Unlock()
		}
	}
}

// names returns the programs of the current config, sorted.
func (m *model) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.cur))
}

func (m *model) program(name string) *program {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.cur[name]; p != nil {
		return p.clone()
	}
	return nil
}

func (m *model) setWant(name string, run bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.cur[name]; ok {
		m.want[name] = run
	}
}

// install makes next the current config: removed programs leave the model,
// added ones want what autostart says, changed ones keep what was asked
// of them (a reload does not start a stopped program).
func (m *model) install(next map[string]*program, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for n := range m.cur {
		if next[n] == nil {
			delete(m.want, n)
			m.touched[n] = now
			m.removals[n]++
		}
	}
	for n, p := range next {
		old := m.cur[n]
		switch {
		case old == nil:
			m.want[n] = p.autostart
			m.touched[n] = now
		case !sameProgram(old, p):
			m.touched[n] = now
		}
	}
	m.cur = next
}

// sameProgram compares what the config says of two programs.
func sameProgram(a, b *program) bool {
	var x, y strings.Builder
	a.toml(&x)
	b.toml(&y)
	return x.String() == y.String()
}

// snapshot returns a copy of the current config and of want.
func (m *model) snapshot() (cur map[string]*program, want map[string]bool, touched map[string]time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return cloneAll(m.cur), maps.Clone(m.want), maps.Clone(m.touched)
}

func (m *model) removedTimes(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.removals[name]
}
