package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/supervise-dev/supervise/clock"
	"github.com/supervise-dev/supervise/watch/glob"
)

const (
	// DefaultDebounce is the quiet time a caller with no opinion should ask
	// for: long enough to cover an editor's save or a git checkout, short
	// enough to feel immediate.
	DefaultDebounce = 200 * time.Millisecond
	// DefaultMaxWait bounds how long a batch can be pushed back by events
	// that never stop.
	DefaultMaxWait = 10 * time.Second
)

// eventBuffer is the fsnotify Events channel's capacity: fsnotify's reader
// keeps draining the kernel queue while Run handles a burst, so a git
// checkout does not overflow it, and a debounce of 0 sees the burst as one
// batch.
const eventBuffer = 1024

// Config says what a Watcher watches. Nothing in it may change after New.
type Config struct {
	// Paths are the directories (watched recursively, subdirectories
	// created later included) and files to watch. Relative paths are
	// taken from the working directory; symlinks among them are resolved
	// once, by New. At least one; each must exist.
	Paths []string
	// Include, when not empty, keeps only the changes whose path (relative
	// to its watched directory) matches one of these globs (see package
	// glob: "**" spans directories, a pattern without '/' matches at any
	// depth, a matched directory covers its subtree).
	Include []string
	// Exclude drops the changes matching one of these globs, and is never
	// descended into; DefaultExcludes are always excluded too. Include and
	// Exclude apply inside directories: a file named in Paths is always
	// watched.
	Exclude []string
	// GitIgnore also drops what the .gitignore at the top of each watched
	// directory ignores (read once, by New; see glob.Ignore for the
	// rules followed), and never descends into a folder it ignores.
	GitIgnore bool
	// Debounce is how long the tree must stay quiet before a batch fires.
	// 0 fires as soon as the events already delivered are handled (the
	// next event batch); callers with no opinion pass DefaultDebounce.
	Debounce time.Duration
	// MaxWait bounds how long events that keep coming can hold a batch
	// back; default DefaultMaxWait, never less than Debounce.
	MaxWait time.Duration
	// Clock is where the debounce timer comes from; nil is the wall clock.
	Clock clock.Clock
	// Logger gets what cannot be returned (a directory that cannot be
	// watched, a lost event queue); nil discards.
	Logger *slog.Logger
}

// root is one entry of Config.Paths, resolved.
type root struct {
	path   string
	dir    bool
	ignore *glob.Ignore // the root's .gitignore, with Config.GitIgnore
}

// Watcher watches directory trees and files for changes and reports them
// in debounced batches. New sets up every watch; Run reports.
type Watcher struct {
	roots    []root // longest path first, so nested roots claim their events
	include  []*glob.Glob
	exclude  []*glob.Glob // DefaultExcludes, then Config.Exclude
	debounce time.Duration
	maxWait  time.Duration
	clock    clock.Clock
	log      *slog.Logger
	fs       *fsnotify.Watcher
	running  atomic.Bool

	// dirs is every directory of a tree with a watch on it. New fills it,
	// then only Run's goroutine touches it.
	dirs map[string]bool

	// seen, when set (by tests, before Run), gets every raw event once it
	// has been handled and the batch timer set for it (or, with no
	// debounce, its batch fired), on Run's goroutine.
	seen func(fsnotify.Event)
}

// New checks cfg and watches every path in it; when it returns, a change
// anywhere is caught, even if Run is called later. The Watcher holds an
// inotify instance until Run returns or Close is called.
func New(cfg Config) (*Watcher, error) {
	if len(cfg.Paths) == 0 {
		return nil, errors.New("watch: no paths to watch")
	}
	w := &Watcher{
		debounce: max(cfg.Debounce, 0),
		maxWait:  cfg.MaxWait,
		clock:    cfg.Clock,
		log:      cfg.Logger,
		dirs:     map[string]bool{},
	}
	if w.maxWait <= 0 {
		w.maxWait = DefaultMaxWait
	}
	w.maxWait = max(w.maxWait, w.debounce)
	if w.clock == nil {
		w.clock = clock.Real{}
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	for _, p := range cfg.Include {
		g, err := glob.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("watch: include %q: %w", p, err)
		}
		w.include = append(w.include, g)
	}
	for _, p := range slices.Concat(defaultExcludes, cfg.Exclude) {
		g, err := glob.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("watch: exclude %q: %w", p, err)
		}
		w.exclude = append(w.exclude, g)
	}
	for _, p := range cfg.Paths {
		abs, err := filepath.Abs(p)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("watch %s: %w", p, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("watch %s: %w", p, err)
		}
		r := root{path: abs, dir: st.IsDir()}
		if r.dir && cfg.GitIgnore {
			r.ignore = readIgnore(filepath.Join(abs, ".gitignore"))
		}
		w.roots = append(w.roots, r)
	}
	slices.SortStableFunc(w.roots, func(a, b root) int { return len(b.path) - len(a.path) })

	fw, err := fsnotify.NewBufferedWatcher(eventBuffer)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	w.fs = fw
	for _, r := range w.roots {
		if !r.dir {
			// A file is watched through its directory, which sees the
			// write-and-rename of an editor that a watch on the file's
			// inode would miss.
			err = w.addWatch(filepath.Dir(r.path))
		} else {
			err = w.addTree(r, r.path, nil)
		}
		if err != nil {
			fw.Close()
			return nil, err
		}
	}
	return w, nil
}

// addWatch watches one directory. ENOSPC from inotify means the per-user
// watch limit, not a full disk: say which knob to turn.
func (w *Watcher) addWatch(dir string) error {
	err := w.fs.Add(dir)
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("watch %s: inotify watch limit reached (raise fs.inotify.max_user_watches, or exclude large directories): %w", dir, err)
	}
	if err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	return nil
}

// addTree watches start and every directory under it that is not
// excluded. With found set (a directory that appeared while running), it
// also reports every path found below start: they may have been created
// before the watch on their directory existed, so no event will come.
// Only an error on start itself, or the watch limit, is returned; a
// subdirectory that cannot be read is logged and skipped.
func (w *Watcher) addTree(r root, start string, found func(string)) error {
	return filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start {
				return fmt.Errorf("watch %s: %w", p, err)
			}
			w.log.Warn("not watching a directory", "path", p, "err", err)
			return nil // WalkDir skips what it could not read
		}
		if p != start && w.excluded(r, relTo(r.path, p), d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if p != start && found != nil {
			found(p)
		}
		if !d.IsDir() {
			return nil
		}
		if err := w.addWatch(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked: its parent saw that
			}
			if p == start || errors.Is(err, syscall.ENOSPC) {
				return err
			}
			w.log.Warn("not watching a directory", "path", p, "err", err)
			return filepath.SkipDir
		}
		w.dirs[p] = true
		return nil
	})
}

// relTo returns p relative to dir, slash-separated; p is dir or under it.
func relTo(dir, p string) string {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}

// excluded reports whether rel, under root r, is left out; isDir says
// whether it is a folder (for the .gitignore's folder-only patterns).
func (w *Watcher) excluded(r root, rel string, isDir bool) bool {
	return slices.ContainsFunc(w.exclude, func(g *glob.Glob) bool { return g.Match(rel) }) || r.ignore.Match(rel, isDir)
}

// maxIgnoreFile bounds the .gitignore read.
const maxIgnoreFile = 1 << 20

// readIgnore reads a .gitignore: nil when there is none; a file that
// cannot be read, or is not a regular file, is no rules.
func readIgnore(file string) *glob.Ignore {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile))
	if err != nil {
		return nil
	}
	return glob.ParseIgnore(string(data))
}

func (w *Watcher) included(rel string) bool {
	return len(w.include) == 0 || slices.ContainsFunc(w.include, func(g *glob.Glob) bool { return g.Match(rel) })
}

// rootOf finds the root an event path belongs to.
func (w *Watcher) rootOf(name string) (root, bool) {
	for _, r := range w.roots {
		if name == r.path || r.dir && within(name, r.path) {
			return r, true
		}
	}
	return root{}, false
}

// within reports whether p is strictly under dir.
func within(p, dir string) bool {
	if dir == "/" {
		return len(p) > 1 && p[0] == '/'
	}
	return len(p) > len(dir) && p[len(dir)] == '/' && strings.HasPrefix(p, dir)
}

// batch is the set of changed paths waiting for the debounce timer.
type batch struct {
	paths    map[string]struct{}
	overflow bool // events were lost: the caller hears "the roots changed"
}

func (b *batch) add(p string) {
	if b.paths == nil {
		b.paths = map[string]struct{}{}
	}
	b.paths[p] = struct{}{}
}

func (b *batch) empty() bool { return len(b.paths) == 0 && !b.overflow }

// handle files one raw event into b and reports whether it counts (so
// the debounce timer restarts only for events that matter).
func (w *Watcher) handle(ev fsnotify.Event, b *batch) bool {
	r, ok := w.rootOf(ev.Name)
	if !ok {
		return false // a sibling of a watched file
	}
	if !r.dir {
		b.add(ev.Name)
		return true
	}
	if ev.Name == r.path {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			w.log.Warn("a watched directory is gone; changes in it are no longer seen", "path", r.path)
			delete(w.dirs, r.path)
			b.add(r.path)
			return true
		}
		return false
	}
	rel := relTo(r.path, ev.Name)
	// A removed path is no folder any more: its folder-only patterns
	// were checked when it was watched.
	st, statErr := os.Lstat(ev.Name)
	if w.excluded(r, rel, statErr == nil && st.IsDir()) {
		return false
	}
	counts := false
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		w.forget(ev.Name)
	}
	if ev.Has(fsnotify.Create) {
		if statErr == nil && st.IsDir() {
			err := w.addTree(r, ev.Name, func(p string) {
				if w.included(relTo(r.path, p)) {
					b.add(p)
					counts = true
				}
			})
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				w.log.Error("not watching a new directory", "path", ev.Name, "err", err)
			}
		}
	}
	if w.included(rel) {
		b.add(ev.Name)
		counts = true
	}
	return counts
}

// forget drops the watches of a directory that was removed or renamed,
// and of everything under it. The kernel has already dropped a removed
// one; a renamed one would otherwise keep reporting under its old name.
// Where it went, if inside a tree, comes back as a Create.
func (w *Watcher) forget(name string) {
	if !w.dirs[name] {
		return
	}
	for d := range w.dirs {
		if d == name || within(d, name) {
			_ = w.fs.Remove(d) // gone already, most of the time
			delete(w.dirs, d)
		}
	}
}

// overflowed handles a lost event queue: the batch says "everything may
// have changed", and the trees are walked again for directories whose
// Create was lost.
func (w *Watcher) overflowed(b *batch) {
	w.log.Warn("file change events were lost (inotify queue overflow); treating every watched path as changed",
		"hint", "raise fs.inotify.max_queued_events")
	b.overflow = true
	for _, r := range w.roots {
		if r.dir {
			if err := w.addTree(r, r.path, nil); err != nil {
				w.log.Error("watching again after an overflow", "path", r.path, "err", err)
			}
		}
	}
}

// take empties b and returns its paths, sorted; after an overflow they are
// the watched roots (Config.Paths, resolved) and whatever else was seen.
func (w *Watcher) take(b *batch) []string {
	set := b.paths
	if b.overflow {
		if set == nil {
			set = map[string]struct{}{}
		}
		for _, r := range w.roots {
			set[r.path] = struct{}{}
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	*b = batch{}
	return out
}

// Run reports changes until ctx ends (then it returns nil) or the Watcher
// is closed (nil too). It calls changed on its own goroutine once per
// debounced batch, with the changed paths, absolute and sorted; Run waits
// for changed to return, so changed should not block for long (events
// queue up meanwhile). An fsnotify error that loses events counts as a
// change of every watched path. Run may be called once; it closes the
// Watcher when it returns.
func (w *Watcher) Run(ctx context.Context, changed func(paths []string)) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("watch: Run called twice")
	}
	if changed == nil {
		w.fs.Close()
		return errors.New("watch: Run needs a changed func")
	}
	defer w.fs.Close()
	return w.loop(ctx, w.fs.Events, w.fs.Errors, changed)
}

// loop is Run over any event source, so tests can feed it events.
func (w *Watcher) loop(ctx context.Context, events <-chan fsnotify.Event, errs <-chan error, changed func([]string)) error {
	d := &debouncer{clock: w.clock, delay: w.debounce, maxWait: w.maxWait}
	defer d.stop()
	var b batch
	var handled []fsnotify.Event // for w.seen
	fire := func() {
		if !b.empty() {
			changed(w.take(&b))
		}
	}
	// settle ends the handling of one event, or with no debounce of
	// everything already delivered; false once the source is closed.
	settle := func(counts bool) bool {
		open := true
		if w.debounce == 0 {
			open = w.drain(events, errs, &b, &handled)
			fire()
		} else if counts {
			d.touch()
		}
		if w.seen != nil {
			for _, ev := range handled {
				w.seen(ev)
			}
			handled = handled[:0]
		}
		return open
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			counts := w.handle(ev, &b)
			if w.seen != nil {
				handled = append(handled, ev)
			}
			if !settle(counts) {
				return nil
			}
		case err, ok := <-errs:
			if !ok {
				return nil
			}
			if !settle(w.handleErr(err, &b)) {
				return nil
			}
		case <-d.C():
			d.fired()
			fire()
		}
	}
}

// drain handles every event already delivered, without waiting: with no
// debounce, that is the batch. It returns false once the source is closed.
func (w *Watcher) drain(events <-chan fsnotify.Event, errs <-chan error, b *batch, handled *[]fsnotify.Event) bool {
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return false
			}
			w.handle(ev, b)
			if w.seen != nil {
				*handled = append(*handled, ev)
			}
		case err, ok := <-errs:
			if !ok {
				return false
			}
			w.handleErr(err, b)
		default:
			return true
		}
	}
}

// handleErr reports whether err counts as a change.
func (w *Watcher) handleErr(err error, b *batch) bool {
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		w.overflowed(b)
		return true
	}
	w.log.Warn("watching files", "err", err)
	return false
}

// Close releases the inotify instance; a Run in progress returns. It is
// safe to call at any time, more than once, and after Run returned.
func (w *Watcher) Close() error {
	return w.fs.Close()
}
