package watch

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/supervise-dev/supervise/clock"
)

// maxHashed bounds how much of a file File reads per check: a config is
// small, and a path pointing at something huge must not stall the loop.
// Past it, the size stands in for the rest.
const maxHashed = 64 << 20

// File calls changed each time the content of the file at path changes,
// and blocks until ctx ends (then it returns nil).
//
// It watches the file's directory, not the file: an editor that writes a
// new file and renames it over the old one, and a Kubernetes ConfigMap
// update (a new "..2026_…" directory, then the "..data" symlink replaced
// by a rename) never touch the inode a watch on the file would hold. Any
// change in the directory (editor temp files aside) starts a debounce of
// debounce (0: handle what has arrived, then check); when it ends, the
// file is read through its symlinks and hashed, and changed is called only
// if the hash differs from the last one seen. A missing or unreadable file
// is not a change: the next readable content is compared with the last.
// When the file is a symlink into another directory, that directory is
// watched too, and followed when the link changes.
//
// changed runs on File's goroutine. File returns an error when the
// directory cannot be watched, or when it is removed or renamed (nothing
// more could be seen).
func File(ctx context.Context, path string, debounce time.Duration, clk clock.Clock, changed func()) error {
	return watchFile(ctx, path, debounce, clk, changed, nil)
}

// watchFile is File with a hook tests use to know a check happened: it
// gets whether changed was called.
func watchFile(ctx context.Context, path string, debounce time.Duration, clk clock.Clock, changed func(), checked func(bool)) error {
	if clk == nil {
		clk = clock.Real{}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("watch %s: %w", path, err)
	}
	fw, err := fsnotify.NewBufferedWatcher(256)
	if err != nil {
		return fmt.Errorf("watch %s: %w", path, err)
	}
	defer fw.Close()
	f := &fileWatch{fs: fw, path: abs, dir: filepath.Dir(abs)}
	if err := fw.Add(f.dir); err != nil {
		return fmt.Errorf("watch %s: directory %s: %w", path, f.dir, err)
	}
	f.follow()
	// Hashed after the watch exists, so a change in between is not lost.
	last, _ := hashFile(abs)

	d := &debouncer{clock: clk, delay: max(debounce, 0), maxWait: max(DefaultMaxWait, debounce)}
	defer d.stop()
	check := func() {
		f.follow()
		h, ok := hashFile(abs)
		fire := ok && h != last
		if fire {
			last = h
			changed()
		}
		if checked != nil {
			checked(fire)
		}
	}
	for {
		counts := false
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			if err := f.gone(ev); err != nil {
				return err
			}
			counts = f.counts(ev)
		case e, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			// An overflow lost events: check, as for any change. Other
			// errors say nothing about the file; the next check will.
			counts = errors.Is(e, fsnotify.ErrEventOverflow)
		case <-d.C():
			d.fired()
			check()
		}
		switch {
		case !counts:
		case debounce > 0:
			d.touch()
		default:
			// No debounce: take everything already delivered, then check
			// once.
			if err := f.drain(); err != nil {
				return err
			}
			check()
		}
	}
}

// fileWatch is the state of one File call; it belongs to its goroutine.
type fileWatch struct {
	fs     *fsnotify.Watcher
	path   string // absolute, as given (symlinks kept)
	dir    string // its directory, always watched
	target string // directory of the resolved file, when not dir and watched
}

// follow watches the directory the file resolves into, when the file is a
// symlink to another directory, and moves that watch when the link moves.
func (f *fileWatch) follow() {
	real, err := filepath.EvalSymlinks(f.path)
	if err != nil {
		return // missing for now: keep what is watched
	}
	td := filepath.Dir(real)
	if td == f.target {
		return
	}
	if f.target != "" {
		_ = f.fs.Remove(f.target)
		f.target = ""
	}
	if td != f.dir && f.fs.Add(td) == nil {
		f.target = td
	}
}

// counts reports whether ev may have changed the file: anything in a
// watched directory but the temp files editors write beside it.
func (f *fileWatch) counts(ev fsnotify.Event) bool {
	base := filepath.Base(ev.Name)
	return !slices.ContainsFunc(defaultExcludes, func(p string) bool {
		ok, _ := filepath.Match(p, base)
		return ok
	})
}

// drain consumes what has been delivered, without waiting.
func (f *fileWatch) drain() error {
	for {
		select {
		case ev, ok := <-f.fs.Events:
			if !ok {
				return nil
			}
			if err := f.gone(ev); err != nil {
				return err
			}
		case _, ok := <-f.fs.Errors:
			if !ok {
				return nil
			}
		default:
			return nil
		}
	}
}

// gone returns an error when the always-watched directory itself went
// away: the kernel dropped the watch, and nothing more would be seen.
func (f *fileWatch) gone(ev fsnotify.Event) error {
	if ev.Name == f.dir && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) {
		return fmt.Errorf("watch %s: directory %s was removed or renamed", f.path, f.dir)
	}
	return nil
}

// hashFile hashes the content of the regular file at path, through
// symlinks; ok is false when it cannot be read. O_NONBLOCK keeps a FIFO
// from blocking the open.
func hashFile(path string) (sum [sha256.Size]byte, ok bool) {
	fd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return sum, false
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return sum, false
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(fd, maxHashed)); err != nil {
		return sum, false
	}
	if st.Size() > maxHashed {
		_ = binary.Write(h, binary.LittleEndian, st.Size())
	}
	h.Sum(sum[:0])
	return sum, true
}
