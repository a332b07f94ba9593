package logs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Defaults of FileConfig.
const (
	DefaultMaxFiles   = 5
	DefaultFileBuffer = 64 << 10
	DefaultFilePerm   = 0o644
)

// FileConfig configures a File. Zero fields get defaults.
type FileConfig struct {
	Path string
	// MaxSize rotates the file before a line would make it larger than this
	// many bytes; 0 never rotates. A line longer than MaxSize gets a file
	// of its own.
	MaxSize int64
	// MaxFiles is how many files rotation keeps, the current one included:
	// Path, Path.1 (the newest rotated) … Path.<MaxFiles-1>. Default
	// DefaultMaxFiles; 1 keeps only the current file, emptied on rotation.
	MaxFiles int
	// Perm is the mode of new files; default DefaultFilePerm.
	Perm fs.FileMode
	// BufferSize is how many bytes are collected before a write; default
	// DefaultFileBuffer.
	BufferSize int
}

// File is a sink appending each line and a newline to a file, rotating it
// by size. A file only ever holds whole lines: rotation happens between
// lines, and each write holds whole lines. A long line cut into Partial
// chunks is stored as several lines. Safe for concurrent use; lines of
// several streams sharing the file never interleave inside a line.
//
// On a write error the lines of that write are dropped and the error is
// returned, so a full disk does not stall the program; a file that could
// not be opened is opened again at the next write.
type File struct {
	cfg FileConfig

	mu      sync.Mutex
	f       *os.File // nil while not open; guarded by mu
	size    int64    // bytes in the file, buf included; guarded by mu
	buf     []byte   // guarded by mu
	closed  bool     // guarded by mu
	cleaned bool     // extra rotated files removed; guarded by mu
}

// OpenFile opens (creating it and its directory if needed) the file cfg
// names, appending to what it holds.
func OpenFile(cfg FileConfig) (*File, error) {
	if cfg.Path == "" {
		return nil, errors.New("log file: no path")
	}
	if cfg.MaxFiles <= 0 {
		cfg.MaxFiles = DefaultMaxFiles
	}
	if cfg.Perm == 0 {
		cfg.Perm = DefaultFilePerm
	}
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = DefaultFileBuffer
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o755); err != nil {
		return nil, fmt.Errorf("log file %s: %w", cfg.Path, err)
	}
	f := &File{cfg: cfg, buf: make([]byte, 0, cfg.BufferSize)}
	if err := f.openLocked(); err != nil {
		return nil, err
	}
	return f, nil
}

// Path returns the path of the current file.
func (f *File) Path() string { return f.cfg.Path }

func (f *File) openLocked() error {
	fd, err := os.OpenFile(f.cfg.Path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, f.cfg.Perm)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	st, err := fd.Stat()
	if err != nil {
		fd.Close()
		return fmt.Errorf("log file: %w", err)
	}
	f.f, f.size = fd, st.Size()+int64(len(f.buf))
	return nil
}

// WriteLine buffers l, writing the buffer first when l would not fit and
// rotating first when l would take the file past MaxSize.
func (f *File) WriteLine(l Line) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("log file %s: line after close: %w", f.cfg.Path, ErrClosed)
	}
	var errs []error
	n := int64(len(l.Text)) + 1
	if f.cfg.MaxSize > 0 && f.size > 0 && f.size+n > f.cfg.MaxSize {
		errs = append(errs, f.flushLocked(), f.rotateLocked())
	} else if len(f.buf) > 0 && len(f.buf)+int(n) > f.cfg.BufferSize {
		errs = append(errs, f.flushLocked())
	}
	f.buf = append(f.buf, l.Text...)
	f.buf = append(f.buf, '\n')
	f.size += n
	if len(f.buf) >= f.cfg.BufferSize {
		errs = append(errs, f.flushLocked())
	}
	return errors.Join(errs...)
}

// Flush writes the buffered lines.
func (f *File) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.flushLocked()
}

func (f *File) flushLocked() error {
	if len(f.buf) == 0 {
		return nil
	}
	var err error
	if f.f == nil {
		err = f.openLocked()
	}
	if err == nil {
		var n int
		n, err = f.f.Write(f.buf)
		if err != nil {
			f.size -= int64(len(f.buf) - n)
			err = fmt.Errorf("log file: %w (%d bytes lost)", err, len(f.buf)-n)
		}
	} else {
		f.size -= int64(len(f.buf))
		err = fmt.Errorf("%w (%d bytes lost)", err, len(f.buf))
	}
	f.buf = f.buf[:0]
	if cap(f.buf) > 4*f.cfg.BufferSize {
		f.buf = make([]byte, 0, f.cfg.BufferSize) // one huge line grew it
	}
	return err
}

// rotateLocked shifts Path.i to Path.i+1, Path to Path.1, dropping the
// oldest, and starts an empty Path. The buffer must be empty.
func (f *File) rotateLocked() error {
	var errs []error
	if f.f != nil {
		errs = append(errs, f.f.Close())
		f.f = nil
	}
	p := f.cfg.Path
	if f.cfg.MaxFiles == 1 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for i := f.cfg.MaxFiles - 1; i >= 1; i-- {
		from := p
		if i > 1 {
			from = p + "." + strconv.Itoa(i-1)
		}
		// Renaming onto Path.<MaxFiles-1> replaces the oldest file.
		if err := os.Rename(from, p+"."+strconv.Itoa(i)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if !f.cleaned {
		// Once is enough: no one else makes numbered files.
		errs = append(errs, f.removeExtraLocked())
		f.cleaned = true
	}
	f.size = 0
	errs = append(errs, f.openLocked())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("rotating %s: %w", p, err)
	}
	return nil
}

// removeExtraLocked removes rotated files numbered MaxFiles or more, left
// by an earlier, larger MaxFiles.
func (f *File) removeExtraLocked() error {
	dir, base := filepath.Split(f.cfg.Path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok {
			continue
		}
		if i, err := strconv.Atoi(suffix); err == nil && i >= f.cfg.MaxFiles && strconv.Itoa(i) == suffix {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Reopen writes the buffer and opens Path again, for when something else
// has moved the file away (logrotate, SIGUSR2). An open error is returned;
// the next write tries again.
func (f *File) Reopen() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("log file %s: reopen after close: %w", f.cfg.Path, ErrClosed)
	}
	err := f.flushLocked()
	if f.f != nil {
		if cerr := f.f.Close(); err == nil {
			err = cerr
		}
		f.f = nil
	}
	return errors.Join(err, f.openLocked())
}

// Close writes the buffered lines and closes the file. Lines written after
// Close are refused.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	err := f.flushLocked()
	if f.f != nil {
		if cerr := f.f.Close(); err == nil {
			err = cerr
		}
		f.f = nil
	}
	return err
}
