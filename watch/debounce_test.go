package watch

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/supervise-dev/supervise/clock/fakeclock"
)

// feed runs a Watcher's loop on events the test sends, on a fake clock.
// The channels are unbuffered unless buffered is set: a send returns once
// the loop has taken the event, and the next send once it has handled it.
type feed struct {
	*harness
	dir    string
	events chan fsnotify.Event
	errs   chan error
}

func startFeed(t *testing.T, cfg Config, buffered int) *feed {
	t.Helper()
	f := &feed{dir: tempDir(t), events: make(chan fsnotify.Event, buffered), errs: make(chan error)}
	f.harness = &harness{t: t, clock: fakeclock.New(t0), batches: newRecord[[]string](), seen: newRecord[fsnotify.Event](), done: make(chan error, 1)}
	cfg.Paths = []string{f.dir}
	cfg.Clock = f.clock
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.w = w
	w.seen = f.seen.add
	t.Cleanup(func() { w.Close() })
	return f
}

func (f *feed) run() {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { f.done <- f.w.loop(ctx, f.events, f.errs, f.batches.add) }()
	f.t.Cleanup(func() {
		cancel()
		if err := <-f.done; err != nil {
			f.t.Errorf("loop returned %v", err)
		}
	})
}

func (f *feed) send(op fsnotify.Op, name string) {
	f.events <- fsnotify.Event{Name: filepath.Join(f.dir, name), Op: op}
}

// armedAt waits until the batch timer is armed at t0+d.
func (f *feed) armedAt(d time.Duration) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := f.clock.WaitForWaiterAt(ctx, t0.Add(d)); err != nil {
		f.t.Fatalf("no timer armed at t0+%v", d)
	}
}

func TestDebounceWaitsForQuiet(t *testing.T) {
	f := startFeed(t, Config{Debounce: 200 * time.Millisecond}, 0)
	f.run()
	f.send(fsnotify.Write, "a.go")
	f.armedAt(200 * time.Millisecond)

	f.clock.Step(150 * time.Millisecond) // t0+150: still quiet for less than 200ms
	f.noBatch(0)
	f.send(fsnotify.Write, "b.go") // pushes the deadline to t0+350
	f.armedAt(350 * time.Millisecond)
	f.clock.Step(199 * time.Millisecond) // t0+349
	if !f.clock.HasWaiterAt(t0.Add(350 * time.Millisecond)) {
		t.Fatal("the batch fired before the tree was quiet for 200ms")
	}
	f.noBatch(0)
	f.send(fsnotify.Chmod, "a.go") // the same path again, at t0+349
	f.armedAt(549 * time.Millisecond)

	if got, want := f.fire(200*time.Millisecond), join(f.dir, "a.go", "b.go"); !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q, want %q", got, want)
	}
	if f.clock.HasWaiters() {
		t.Error("a timer is still armed after the batch fired")
	}

	// The next event starts a new batch.
	f.send(fsnotify.Remove, "c.go")
	f.armedAt(749 * time.Millisecond)
	if got, want := f.fire(200*time.Millisecond), join(f.dir, "c.go"); !reflect.DeepEqual(got, want) {
		t.Errorf("second batch = %q, want %q", got, want)
	}
	if n := len(f.batches.snapshot()); n != 2 {
		t.Errorf("%d batches, want 2", n)
	}
}

func TestDebounceMaxWait(t *testing.T) {
	f := startFeed(t, Config{Debounce: 200 * time.Millisecond, MaxWait: time.Second}, 0)
	f.run()
	// An event every 150ms never leaves 200ms of quiet; MaxWait fires the
	// batch 1s after its first event anyway.
	var names []string
	for i := range 7 {
		name := string(rune('a'+i)) + ".go"
		names = append(names, name)
		f.send(fsnotify.Write, name)
		now := time.Duration(i) * 150 * time.Millisecond
		f.armedAt(min(now+200*time.Millisecond, time.Second))
		if i < 6 {
			f.clock.Step(150 * time.Millisecond)
		}
	}
	f.noBatch(0)
	if got, want := f.fire(100*time.Millisecond), join(f.dir, names...); !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q, want %q", got, want)
	}
}

func TestDebounceZeroIsNextBatch(t *testing.T) {
	f := startFeed(t, Config{Debounce: 0}, 16)
	// Three events already delivered when the loop starts are one batch.
	f.send(fsnotify.Create, "a")
	f.send(fsnotify.Write, "b")
	f.send(fsnotify.Write, "a")
	f.run()
	if got, want := f.batches.waitLen(t, "a batch", 1)[0], join(f.dir, "a", "b"); !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q, want %q", got, want)
	}
	f.send(fsnotify.Write, "c")
	if got, want := f.batches.waitLen(t, "a second batch", 2)[1], join(f.dir, "c"); !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q, want %q", got, want)
	}
	if f.clock.HasWaiters() {
		t.Error("debounce 0 armed a timer")
	}
}

func TestFilteredEventsDoNotArmTheTimer(t *testing.T) {
	f := startFeed(t, Config{Debounce: 200 * time.Millisecond, Include: []string{"**/*.go"}, Exclude: []string{"vendor", "gen/**"}}, 0)
	f.run()
	for _, name := range []string{
		"notes.txt", "vendor/x.go", "lib/vendor/y.go", "gen/a/b.go", ".main.go.swp", "main.go~", ".#main.go",
		"4913", "x.tmp", ".git/index", "sub/.git/HEAD",
		filepath.Join("..", filepath.Base(f.dir)+"-sibling", "a.go"), // outside the root
		"zz.txt", // once this send returns, everything before it was handled
	} {
		f.send(fsnotify.Write, name)
	}
	if f.clock.HasWaiters() {
		t.Fatal("an excluded or not included path armed the batch timer")
	}
	f.send(fsnotify.Write, "main.go")
	f.send(fsnotify.Write, "pkg/x/y.go")
	f.send(fsnotify.Write, "pkg/x/y_test.txt")
	f.armedAt(200 * time.Millisecond)
	if got, want := f.fire(200*time.Millisecond), join(f.dir, "main.go", "pkg/x/y.go"); !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q, want %q", got, want)
	}
}

func TestOverflowCountsAsAChange(t *testing.T) {
	f := startFeed(t, Config{Debounce: 200 * time.Millisecond}, 0)
	f.run()
	f.errs <- fsnotify.ErrEventOverflow
	f.armedAt(200 * time.Millisecond)
	if got, want := f.fire(200*time.Millisecond), []string{f.dir}; !reflect.DeepEqual(got, want) {
		t.Errorf("batch after an overflow = %q, want the root %q", got, want)
	}
	// Any other error is logged, and changes nothing.
	f.errs <- context.DeadlineExceeded
	f.send(fsnotify.Write, "sync") // handled after the error
	f.armedAt(400 * time.Millisecond)
	if got, want := f.fire(200*time.Millisecond), join(f.dir, "sync"); !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q, want %q", got, want)
	}
}

func TestLoopEndsWhenTheSourceCloses(t *testing.T) {
	f := startFeed(t, Config{Debounce: 0}, 1)
	go func() { f.done <- f.w.loop(context.Background(), f.events, f.errs, f.batches.add) }()
	f.send(fsnotify.Write, "last")
	close(f.events)
	select {
	case err := <-f.done:
		if err != nil {
			t.Errorf("loop returned %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("loop did not return when its events channel closed")
	}
	if got := f.batches.snapshot(); len(got) != 1 || !reflect.DeepEqual(got[0], join(f.dir, "last")) {
		t.Errorf("batches = %q, want the last event delivered", got)
	}
}
