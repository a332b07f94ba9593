package watch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/supervise-dev/supervise/clock/fakeclock"
)

// waitLimit bounds every wait for something the kernel or a goroutine
// does; it is never a delay the code under test waits out.
const waitLimit = 20 * time.Second

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// record collects what a goroutine under test reports, and wakes waiters.
type record[T any] struct {
	mu     sync.Mutex
	items  []T
	notify chan struct{}
}

func newRecord[T any]() *record[T] { return &record[T]{notify: make(chan struct{}, 1)} }

func (l *record[T]) add(x T) {
	l.mu.Lock()
	l.items = append(l.items, x)
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

func (l *record[T]) snapshot() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.items)
}

// waitFor waits until cond holds for the items so far.
func (l *record[T]) waitFor(t *testing.T, what string, cond func([]T) bool) []T {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		if items := l.snapshot(); cond(items) {
			return items
		}
		select {
		case <-l.notify:
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s; have %d items", waitLimit, what, len(l.snapshot()))
		}
	}
}

// waitLen waits for at least n items and returns them.
func (l *record[T]) waitLen(t *testing.T, what string, n int) []T {
	t.Helper()
	return l.waitFor(t, what, func(items []T) bool { return len(items) >= n })
}

// harness runs one Watcher on a fake clock and records what it does.
type harness struct {
	t       *testing.T
	w       *Watcher
	clock   *fakeclock.Clock
	batches *record[[]string]
	seen    *record[fsnotify.Event]
	done    chan error
	mark    int // sawEvent looks at events from here on
}

// start makes a Watcher from cfg on a fake clock (when cfg has no clock)
// and runs it until the test ends.
func start(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, batches: newRecord[[]string](), seen: newRecord[fsnotify.Event](), done: make(chan error, 1)}
	if cfg.Clock == nil {
		h.clock = fakeclock.New(t0)
		cfg.Clock = h.clock
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.w = w
	w.seen = h.seen.add
	ctx, cancel := context.WithCancel(context.Background())
	go func() { h.done <- w.Run(ctx, h.batches.add) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(waitLimit):
			t.Errorf("Run did not return after its context ended")
		}
	})
	return h
}

// sawEvent waits until the watcher has handled an event for path with op,
// after the one the last sawEvent found.
func (h *harness) sawEvent(path string, op fsnotify.Op) {
	h.t.Helper()
	h.seen.waitFor(h.t, "an event "+op.String()+" "+path, func(evs []fsnotify.Event) bool {
		i := slices.IndexFunc(evs[min(h.mark, len(evs)):], func(ev fsnotify.Event) bool { return ev.Name == path && ev.Has(op) })
		if i < 0 {
			return false
		}
		h.mark += i + 1
		return true
	})
}

// fire steps the fake clock to the pending batch's deadline (which must be
// armed at now+d) and returns the batch it fires.
func (h *harness) fire(d time.Duration) []string {
	h.t.Helper()
	n := len(h.batches.snapshot())
	at := h.clock.Now().Add(d)
	if !h.clock.HasWaiterAt(at) {
		h.t.Fatalf("no batch timer armed at now+%v", d)
	}
	h.clock.Step(d)
	return h.batches.waitLen(h.t, "a batch", n+1)[n]
}

// noBatch checks that nothing fired so far and no timer is armed.
func (h *harness) noBatch(before int) {
	h.t.Helper()
	if got := h.batches.snapshot(); len(got) != before {
		h.t.Errorf("got batch %q, want none", got[before:])
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdirs(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// tempDir is t.TempDir with symlinks resolved, as the Watcher reports
// paths (on some systems /tmp is a link).
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func join(dir string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(dir, n)
	}
	slices.Sort(out)
	return out
}
