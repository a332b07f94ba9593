package watch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
)

// fileHarness runs watchFile on a fake clock and records its checks.
type fileHarness struct {
	t      *testing.T
	clock  *fakeclock.Clock
	calls  atomic.Int32
	checks *record[bool] // one per content check: whether it called changed
	done   chan error
	cancel context.CancelFunc
	mark   int // next looks at checks from here on
}

func watchFileT(t *testing.T, path string, debounce time.Duration) *fileHarness {
	t.Helper()
	h := &fileHarness{t: t, clock: fakeclock.New(t0), checks: newRecord[bool](), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	ready := make(chan struct{})
	go func() {
		close(ready)
		h.done <- watchFile(ctx, path, debounce, h.clock, func() { h.calls.Add(1) }, h.checks.add)
	}()
	<-ready
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(waitLimit):
			t.Error("File did not return after its context ended")
		}
	})
	return h
}

// next moves the fake clock to each armed deadline until a check whose
// result is want happens after the one the last next found. Checks in
// between (of events that trailed the last one) must find no change.
func (h *fileHarness) next(want bool) {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		cs := h.checks.snapshot()
		for ; h.mark < len(cs); h.mark++ {
			if cs[h.mark] == want {
				h.mark++
				return
			}
			if cs[h.mark] {
				h.t.Fatalf("a check called changed; want one that found no change")
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out after %v waiting for a check that %s", waitLimit, map[bool]string{true: "finds a change", false: "finds no change"}[want])
		}
		if at, ok := h.clock.NextWakeup(); ok {
			h.clock.SetTime(at)
		}
		select {
		case <-h.checks.notify:
		case <-time.After(10 * time.Millisecond): // the event may still be on its way from the kernel
		}
	}
}

func (h *fileHarness) wantCalls(n int32) {
	h.t.Helper()
	if got := h.calls.Load(); got != n {
		h.t.Errorf("changed was called %d times, want %d", got, n)
	}
}

func TestFileCallsOnlyOnContentChange(t *testing.T) {
	dir := tempDir(t)
	path := filepath.Join(dir, "supervise.toml")
	writeFile(t, path, "a = 1\n")
	h := watchFileT(t, path, debounce)
	waitWatching(t, h, path)

	writeFile(t, path, "a = 1\n") // same bytes
	h.next(false)
	now := time.Now()
	must(t, os.Chtimes(path, now, now))
	h.next(false)
	writeFile(t, filepath.Join(dir, "unrelated.txt"), "x")
	h.next(false)
	h.wantCalls(0)

	writeFile(t, path, "a = 2\n")
	h.next(true)
	h.wantCalls(1)

	// Two writes within the debounce are one change.
	writeFile(t, path, "a = 3\n")
	writeFile(t, path, "a = 4\n")
	h.next(true)
	h.wantCalls(2)
}

// waitWatching makes sure the watch is in place before the test changes
// anything: it writes beside the file until a check happens (File starts
// watching on its own goroutine, a moment after watchFileT returns).
func waitWatching(t *testing.T, h *fileHarness, path string) {
	t.Helper()
	probe := filepath.Join(filepath.Dir(path), ".probe")
	deadline := time.Now().Add(waitLimit)
	for i := 0; len(h.checks.snapshot()) == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("no check within %v of writing beside %s", waitLimit, path)
		}
		writeFile(t, probe, strings.Repeat("p", i))
		if at, ok := h.clock.NextWakeup(); ok {
			h.clock.SetTime(at)
		}
		select {
		case <-h.checks.notify:
		case <-time.After(20 * time.Millisecond):
		}
	}
	if h.calls.Load() != 0 {
		t.Fatal("writing beside the file called changed")
	}
	h.mark = len(h.checks.snapshot())
}

func TestFileDebounceZero(t *testing.T) {
	dir := tempDir(t)
	path := filepath.Join(dir, "c.toml")
	writeFile(t, path, "1")
	h := watchFileT(t, path, 0)
	waitWatching(t, h, path)
	// Written whole and renamed into place: written in place, with no
	// debounce, the truncated file could be read before the new bytes.
	writeFile(t, path+".new", "2")
	must(t, os.Rename(path+".new", path))
	h.next(true) // no timer needed: next never finds one to step
	if h.clock.HasWaiters() {
		t.Error("debounce 0 armed a timer")
	}
	h.wantCalls(1)
}

// A Kubernetes ConfigMap volume: the file is a symlink through "..data",
// itself a symlink to a timestamped directory; an update writes a new
// directory and renames a new "..data" link over the old one.
func TestFileConfigMapSwap(t *testing.T) {
	dir := tempDir(t)
	writeFile(t, filepath.Join(dir, "..2026_01_01/config.toml"), "version = 1\n")
	must(t, os.Symlink("..2026_01_01", filepath.Join(dir, "..data")))
	path := filepath.Join(dir, "config.toml")
	must(t, os.Symlink("..data/config.toml", path))
	h := watchFileT(t, path, debounce)
	waitWatching(t, h, path)

	writeFile(t, filepath.Join(dir, "..2026_01_02/config.toml"), "version = 2\n")
	must(t, os.Symlink("..2026_01_02", filepath.Join(dir, "..data_tmp")))
	must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	must(t, os.RemoveAll(filepath.Join(dir, "..2026_01_01")))
	h.next(true)
	h.wantCalls(1)
	if b, _ := os.ReadFile(path); string(b) != "version = 2\n" {
		t.Errorf("file reads %q after the swap", b)
	}

	// A swap to identical content is no change.
	writeFile(t, filepath.Join(dir, "..2026_01_03/config.toml"), "version = 2\n")
	must(t, os.Symlink("..2026_01_03", filepath.Join(dir, "..data_tmp")))
	must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	must(t, os.RemoveAll(filepath.Join(dir, "..2026_01_02")))
	h.next(false)
	h.wantCalls(1)
}

func TestFileEditorWriteAndRename(t *testing.T) {
	dir := tempDir(t)
	path := filepath.Join(dir, "supervise.toml")
	writeFile(t, path, "old")
	h := watchFileT(t, path, debounce)
	waitWatching(t, h, path)

	tmp := filepath.Join(dir, ".supervise.toml.tmp123")
	writeFile(t, tmp, "new")
	must(t, os.Rename(tmp, path))
	h.next(true)

	// vim with backupcopy=no: rename to a backup, write anew, drop the backup.
	must(t, os.Rename(path, path+"~"))
	writeFile(t, path, "newer")
	must(t, os.Remove(path+"~"))
	h.next(true)
	h.wantCalls(2)
}

func TestFileMissingIsNoChange(t *testing.T) {
	dir := tempDir(t)
	path := filepath.Join(dir, "later.toml")
	h := watchFileT(t, path, debounce)
	waitWatching(t, h, path)

	writeFile(t, path, "x")
	h.next(true) // appearing is a change
	must(t, os.Remove(path))
	h.next(false) // disappearing is not
	writeFile(t, path, "x")
	h.next(false) // back with the content last seen
	writeFile(t, path, "y")
	h.next(true)
	h.wantCalls(2)
}

// A file that is a symlink into another directory: edits there count.
func TestFileFollowsSymlinkToAnotherDirectory(t *testing.T) {
	etc, srv := tempDir(t), tempDir(t)
	real := filepath.Join(srv, "real.toml")
	writeFile(t, real, "1")
	path := filepath.Join(etc, "app.toml")
	must(t, os.Symlink(real, path))
	h := watchFileT(t, path, debounce)
	waitWatching(t, h, path)

	tmp := filepath.Join(srv, "real.toml.new")
	writeFile(t, tmp, "2")
	must(t, os.Rename(tmp, real))
	h.next(true)

	// The link moves to a third directory, which is followed.
	other := tempDir(t)
	real2 := filepath.Join(other, "real.toml")
	writeFile(t, real2, "3")
	must(t, os.Symlink(real2, path+".new"))
	must(t, os.Rename(path+".new", path))
	h.next(true)
	writeFile(t, real2, "4")
	h.next(true)
	h.wantCalls(3)
}

func TestFileDirectoryRemoved(t *testing.T) {
	parent := tempDir(t)
	dir := filepath.Join(parent, "conf")
	path := filepath.Join(dir, "a.toml")
	writeFile(t, path, "1")
	h := watchFileT(t, path, debounce)
	waitWatching(t, h, path)
	must(t, os.RemoveAll(dir))
	select {
	case err := <-h.done:
		if err == nil || !strings.Contains(err.Error(), "was removed or renamed") {
			t.Errorf("File = %v, want an error saying the directory went away", err)
		}
		h.done <- err // for the cleanup
	case <-time.After(waitLimit):
		t.Fatal("File kept running after its directory was removed")
	}
}

func TestFileErrorsAndRealClock(t *testing.T) {
	err := File(t.Context(), filepath.Join(t.TempDir(), "no/such/dir/a.toml"), 0, nil, func() {})
	if err == nil || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("File on a missing directory = %v", err)
	}

	// The exported entry point on the wall clock.
	dir := tempDir(t)
	path := filepath.Join(dir, "a.toml")
	writeFile(t, path, "1")
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan struct{}, 16)
	done := make(chan error, 1)
	go func() { done <- File(ctx, path, 10*time.Millisecond, nil, func() { calls <- struct{}{} }) }()
	// Write until the watch is up and sees a change (bounded).
	deadline := time.After(waitLimit)
	for i := 2; ; i++ {
		writeFile(t, path, strings.Repeat("x", i))
		select {
		case <-calls:
		case <-time.After(100 * time.Millisecond): // the watch may not be in place yet: write again
			continue
		case <-deadline:
			t.Fatal("File on the real clock never reported a change")
		}
		break
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("File = %v after cancel, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("File did not return after cancel")
	}
}
