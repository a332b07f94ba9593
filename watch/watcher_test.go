package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/supervise-dev/supervise/clock"
	"github.com/supervise-dev/supervise/clock/fakeclock"
)

const debounce = 200 * time.Millisecond

func TestWatchesSubdirectoriesRecursively(t *testing.T) {
	dir := tempDir(t)
	mkdirs(t, filepath.Join(dir, "a/b/c"), filepath.Join(dir, "d"))
	h := start(t, Config{Paths: []string{dir}, Debounce: debounce})

	deep := filepath.Join(dir, "a/b/c/x.go")
	writeFile(t, deep, "package c")
	h.sawEvent(deep, fsnotify.Write)
	if got, want := h.fire(debounce), []string{deep}; !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q, want %q", got, want)
	}
}

func TestWatchesNewSubdirectories(t *testing.T) {
	dir := tempDir(t)
	h := start(t, Config{Paths: []string{dir}, Debounce: debounce})

	// A whole tree appears at once: what is created before the watch on
	// its directory exists is found by walking it, the rest by events.
	// Either way it is all handled before a later event.
	mkdirs(t, filepath.Join(dir, "new/d1/d2"))
	writeFile(t, filepath.Join(dir, "new/d1/d2/y.go"), "y")
	sync := filepath.Join(dir, "sync")
	writeFile(t, sync, "s")
	h.sawEvent(sync, fsnotify.Write)
	want := join(dir, "new", "new/d1", "new/d1/d2", "new/d1/d2/y.go", "sync")
	if got := h.fire(debounce); !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q\nwant %q", got, want)
	}
	// The new directories are watched now: a later file is seen too.
	later := filepath.Join(dir, "new/d1/d2/z.go")
	writeFile(t, later, "z")
	h.sawEvent(later, fsnotify.Write)
	if got, want := h.fire(debounce), []string{later}; !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q, want %q", got, want)
	}

	// A tree moved in from outside arrives as one event and is walked.
	outside := tempDir(t)
	writeFile(t, filepath.Join(outside, "tree/p/q/r.go"), "r")
	must(t, os.Rename(filepath.Join(outside, "tree"), filepath.Join(dir, "tree")))
	h.sawEvent(filepath.Join(dir, "tree"), fsnotify.Create)
	s1 := filepath.Join(dir, "tree/p/q/s.go")
	writeFile(t, s1, "s")
	h.sawEvent(s1, fsnotify.Write)
	want = join(dir, "tree", "tree/p", "tree/p/q", "tree/p/q/r.go", "tree/p/q/s.go")
	if got := h.fire(debounce); !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q\nwant %q", got, want)
	}

	// A directory renamed inside the tree is watched under its new name.
	if err := os.Rename(filepath.Join(dir, "new/d1"), filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	h.sawEvent(filepath.Join(dir, "moved"), fsnotify.Create)
	f := filepath.Join(dir, "moved/d2/w.go")
	writeFile(t, f, "w")
	h.sawEvent(f, fsnotify.Write)
	got := h.fire(debounce)
	want = join(dir, "moved", "moved/d2", "moved/d2/w.go", "moved/d2/y.go", "moved/d2/z.go", "new/d1")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("batch after the rename = %q\nwant %q", got, want)
	}
	for d := range h.w.dirs { // read after the batch: Run's goroutine is idle
		if strings.HasPrefix(d, filepath.Join(dir, "new/d1")) {
			t.Errorf("still watching %s under its old name", d)
		}
	}
}

func TestExcludesAndEditorFiles(t *testing.T) {
	dir := tempDir(t)
	mkdirs(t, filepath.Join(dir, "build/out"), filepath.Join(dir, ".git/objects"), filepath.Join(dir, "src"))
	h := start(t, Config{Paths: []string{dir}, Exclude: []string{"build", "*.log"}, Debounce: debounce})
	if h.w.dirs[filepath.Join(dir, "build")] || h.w.dirs[filepath.Join(dir, "build/out")] || h.w.dirs[filepath.Join(dir, ".git/objects")] {
		t.Errorf("excluded directories are watched: %v", h.w.dirs)
	}
	for _, name := range []string{"app.log", "src/.main.go.swp", "src/main.go~", "src/4913", "src/.#main.go", "x.tmp", ".git/HEAD"} {
		writeFile(t, filepath.Join(dir, name), "ignored")
	}
	mkdirs(t, filepath.Join(dir, "src/build/deep")) // excluded when it appears too
	writeFile(t, filepath.Join(dir, "src/build/deep/gen.go"), "ignored")
	sync := filepath.Join(dir, "src/main.go")
	writeFile(t, sync, "kept")
	h.sawEvent(sync, fsnotify.Write)
	if got, want := h.fire(debounce), []string{sync}; !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q, want %q", got, want)
	}
	if h.w.dirs[filepath.Join(dir, "src/build")] {
		t.Error("a new excluded directory is watched")
	}
}

// With GitIgnore, what the root's .gitignore ignores is dropped, and an
// ignored folder is never watched; without it, the file means nothing.
func TestGitIgnore(t *testing.T) {
	dir := tempDir(t)
	mkdirs(t, filepath.Join(dir, "log"), filepath.Join(dir, "src/log"), filepath.Join(dir, "coverage"))
	writeFile(t, filepath.Join(dir, ".gitignore"), "/log/\n*.bak\ncoverage/\n!keep.bak\n")
	h := start(t, Config{Paths: []string{dir}, GitIgnore: true, Debounce: debounce})
	if h.w.dirs[filepath.Join(dir, "log")] || h.w.dirs[filepath.Join(dir, "coverage")] || !h.w.dirs[filepath.Join(dir, "src/log")] {
		t.Errorf("watched folders: %v; want log and coverage left out, src/log in", h.w.dirs)
	}
	for _, name := range []string{"log/dev.log", "a.bak", "src/b.bak", "coverage/c.out"} {
		writeFile(t, filepath.Join(dir, name), "ignored")
	}
	kept := join(dir, "keep.bak", "src/log/x.go")
	for _, p := range kept {
		writeFile(t, p, "kept")
	}
	h.sawEvent(kept[1], fsnotify.Write)
	if got := h.fire(debounce); !reflect.DeepEqual(got, kept) {
		t.Errorf("batch = %q, want %q", got, kept)
	}
}

func TestIncludeKeepsOnlyMatches(t *testing.T) {
	dir := tempDir(t)
	mkdirs(t, filepath.Join(dir, "pkg"))
	h := start(t, Config{Paths: []string{dir}, Include: []string{"**/*.go", "templates/**"}, Debounce: debounce})
	writeFile(t, filepath.Join(dir, "README.md"), "no")
	writeFile(t, filepath.Join(dir, "pkg/a.go"), "yes")
	writeFile(t, filepath.Join(dir, "templates/x/index.html"), "yes") // a new dir, found by the walk or an event
	last := filepath.Join(dir, "pkg/notes.txt")
	writeFile(t, last, "no")
	h.sawEvent(last, fsnotify.Write)
	want := join(dir, "pkg/a.go", "templates", "templates/x", "templates/x/index.html")
	if got := h.fire(debounce); !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q\nwant %q", got, want)
	}
}

// A burst of 2,000 new files is one batch: the fake clock does not move
// while they are written, however slow the machine.
func TestBurstIsOneBatch(t *testing.T) {
	dir := tempDir(t)
	mkdirs(t, filepath.Join(dir, "src"))
	h := start(t, Config{Paths: []string{dir}, Debounce: debounce})
	var want []string
	for i := range 2000 {
		p := filepath.Join(dir, "src", fmt.Sprintf("f%04d.go", i))
		writeFile(t, p, "package src")
		want = append(want, p)
	}
	h.seen.waitFor(t, "events for all 2000 files", func(evs []fsnotify.Event) bool {
		written := map[string]bool{}
		for _, ev := range evs {
			if ev.Has(fsnotify.Write) {
				written[ev.Name] = true
			}
		}
		return len(written) == 2000
	})
	got := h.fire(debounce)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("batch has %d paths, want the 2000 files", len(got))
	}
	if n := len(h.batches.snapshot()); n != 1 {
		t.Errorf("%d batches, want 1", n)
	}
}

// vim's save: a "4913" probe, the old file renamed to a backup, a new one
// written, the backup removed, the swap file updated. One change: main.go.
func TestEditorWriteAndRename(t *testing.T) {
	dir := tempDir(t)
	main := filepath.Join(dir, "main.go")
	writeFile(t, main, "v1")
	h := start(t, Config{Paths: []string{dir}, Debounce: debounce})

	probe := filepath.Join(dir, "4913")
	writeFile(t, probe, "")
	must(t, os.Remove(probe))
	must(t, os.Rename(main, main+"~"))
	writeFile(t, main, "v2")
	must(t, os.Remove(main+"~"))
	swap := filepath.Join(dir, ".main.go.swp")
	writeFile(t, swap, "swap")
	h.sawEvent(swap, fsnotify.Write)
	if got, want := h.fire(debounce), []string{main}; !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q, want %q", got, want)
	}

	// Another editor writes a temp file and renames it over the original.
	tmp := filepath.Join(dir, "main.go.tmp")
	writeFile(t, tmp, "v3")
	must(t, os.Rename(tmp, main))
	h.sawEvent(main, fsnotify.Create)
	if got, want := h.fire(debounce), []string{main}; !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q, want %q", got, want)
	}
}

func TestWatchesSingleFiles(t *testing.T) {
	dir := tempDir(t)
	cfgFile := filepath.Join(dir, "app.conf")
	writeFile(t, cfgFile, "a=1")
	h := start(t, Config{Paths: []string{cfgFile}, Debounce: debounce, Exclude: []string{"*.conf"}})
	writeFile(t, filepath.Join(dir, "other.conf"), "not watched")
	tmp := filepath.Join(dir, ".app.conf.new")
	writeFile(t, tmp, "a=2")
	must(t, os.Rename(tmp, cfgFile)) // a named file is kept, whatever Exclude says
	h.sawEvent(cfgFile, fsnotify.Create)
	if got, want := h.fire(debounce), []string{cfgFile}; !reflect.DeepEqual(got, want) {
		t.Errorf("batch = %q, want %q", got, want)
	}
}

// An overflow of the kernel's event queue, for real: the watcher's events
// pile up before Run reads them. The batch then names the root.
func TestRealOverflow(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Skipf("no inotify queue limit to overflow: %v", err)
	}
	limit, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if limit <= 0 || limit > 1<<17 {
		t.Skipf("fs.inotify.max_queued_events = %d: too many events to write in a test", limit)
	}
	dir := tempDir(t)
	files := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
	for _, f := range files {
		writeFile(t, f, "")
	}
	clock := fakeclock.New(t0)
	w, err := New(Config{Paths: []string{dir}, Debounce: 0, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// fsnotify holds up to eventBuffer events in its channel and a read of
	// up to 4096 more; the kernel queue then takes limit. Alternating two
	// files keeps the kernel from merging identical events.
	n := limit + eventBuffer + 4096 + 1000
	for i := range n {
		ts := t0.Add(time.Duration(i) * time.Second)
		must(t, os.Chtimes(files[i%2], ts, ts))
	}
	got := newRecord[[]string]()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, got.add) }()
	defer func() { cancel(); <-done }()
	got.waitFor(t, "a batch naming the root after the overflow", func(bs [][]string) bool {
		return slices.ContainsFunc(bs, func(b []string) bool { return slices.Contains(b, dir) })
	})
}

func TestRealClock(t *testing.T) {
	dir := tempDir(t)
	h := start(t, Config{Paths: []string{dir}, Debounce: 20 * time.Millisecond, Clock: clock.Real{}})
	f := filepath.Join(dir, "x")
	writeFile(t, f, "x")
	bs := h.batches.waitLen(t, "a batch on the real clock", 1)
	if !slices.Contains(bs[0], f) {
		t.Errorf("batch = %q, want it to hold %s", bs[0], f)
	}
}

func TestCloseEndsRun(t *testing.T) {
	w, err := New(Config{Paths: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background(), func([]string) {}) }()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Run did not return after Close")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := w.Run(context.Background(), nil); err == nil {
		t.Error("a second Run did not fail")
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no paths", Config{}, "no paths"},
		{"missing path", Config{Paths: []string{filepath.Join(dir, "nope")}}, "no such file or directory"},
		{"bad include", Config{Paths: []string{dir}, Include: []string{"src/[a-"}}, `include "src/[a-": malformed`},
		{"bad exclude", Config{Paths: []string{dir}, Exclude: []string{""}}, `exclude "": empty pattern`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := New(tt.cfg)
			if err == nil {
				w.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	_, err := New(Config{Paths: []string{filepath.Join(dir, "nope")}})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing path: %v is not ErrNotExist", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
