package logs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Defaults of FileConfig.
const (
	DefaultMaxFiles   = 5
	DefaultFileBuffer = 64 << 10
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
	// Perm is the mode of new files; default 0640 (for a program running
	// as another user, whose group reads them), else 0600 when every user
	// can list the directory.
	Perm fs.FileMode
	// Owner, when set, owns the files the supervisor creates (it runs as
	// root); nil leaves them to the supervisor's user, with the group of
	// User when set (root and User's group).
	Owner *Ident
	// User is the program's user, when it runs as another one: a log
	// directory it owns (or whose group is its group) is accepted, and so
	// are the files in it that it owns. Any other directory that someone
	// but root can write is refused.
	User *Ident
	// Logger reports a write failure once per episode (a full disk) and
	// its end with the bytes lost; default discards.
	Logger *slog.Logger
	// BufferSize is how many bytes are collected before a write; default
	// DefaultFileBuffer.
	BufferSize int
	// Timestamps prefixes each line with its time (RFC 3339, UTC,
	// nanoseconds) and a space. Without it the file holds the program's
	// bytes as they came.
	Timestamps bool
}

// File is a sink appending each line and a newline to a file, rotating it
// by size. A file only ever holds whole lines: rotation happens between
// lines, and each write holds whole lines. A long line cut into Partial
// chunks is stored as several lines. Safe for concurrent use; lines of
// several streams sharing the file never interleave inside a line.
//
// On a write error the lines of that write are dropped, so a full disk
// does not stall the program; the first error of an episode is returned
// and logged, the bytes lost are counted and reported when writes work
// again. A file that could not be opened is opened again at the next write.
//
// The supervisor may run as root and write where the program can write, so
// nothing the program can put at a name is followed: the directory is
// opened once (see openDir), and the file is opened, rotated and cleaned
// up relative to that descriptor, never through a path again.
type File struct {
	cfg  FileConfig
	dir  int    // descriptor of the directory, for the life of the File
	base string // the file's name in dir

	mu      sync.Mutex
	lost    int64    // bytes dropped since the current failure began; guarded by mu
	failing bool     // inside a failure episode; guarded by mu
	f       *os.File // nil while not open; guarded by mu
	size    int64    // bytes in the file, buf included; guarded by mu
	buf     []byte   // guarded by mu
	closed  bool     // guarded by mu
	cleaned bool     // extra rotated files removed; guarded by mu
	// removals counts what was removed at the name; guarded by mu.
	removals int
	// through: the lines go through a symlink root made (see openName),
	// and nothing is rotated; guarded by mu.
	through bool
	// midLine: the file ends inside a line whose rest is in buf (see
	// appendLocked); guarded by mu.
	midLine bool
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
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = DefaultFileBuffer
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	path, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("log file %s: %w", cfg.Path, err)
	}
	dir, err := openDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	if err := checkDir(dir, filepath.Dir(path), cfg.User); err != nil {
		unix.Close(dir)
		return nil, err
	}
	if cfg.Owner == nil && cfg.User != nil && os.Geteuid() == 0 {
		// The program's user reads its own logs through its group, but
		// the files stay root's: were they its own, it could rewrite or
		// truncate what it logged, chmod it for everyone to read, and
		// write to it past max_size, filling the disk unbounded.
		cfg.Owner = &Ident{UID: 0, GID: cfg.User.GID}
		if cfg.Perm == 0 {
			cfg.Perm = 0o640
		}
	}
	if cfg.Perm == 0 {
		cfg.Perm = dirPerm(dir)
	}
	f := &File{cfg: cfg, dir: dir, base: filepath.Base(path), buf: make([]byte, 0, cfg.BufferSize)}
	if err := f.openLocked(); err != nil {
		unix.Close(dir)
		return nil, err
	}
	return f, nil
}

func (f *File) absPath() string {
	if p, err := filepath.Abs(f.cfg.Path); err == nil {
		return p
	}
	return f.cfg.Path
}

// setLimits changes the rotation limits from the next line on.
func (f *File) setLimits(maxSize int64, maxFiles int) {
	if maxFiles <= 0 {
		maxFiles = DefaultMaxFiles
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if maxFiles != f.cfg.MaxFiles {
		f.cleaned = false // fewer files now: remove the extra at the next rotation
	}
	f.cfg.MaxSize, f.cfg.MaxFiles = maxSize, maxFiles
}

// Path returns the path of the current file.
func (f *File) Path() string { return f.cfg.Path }

func (f *File) openLocked() error {
	if removed(f.dir) {
		// Someone removed the directory (and may have made it again):
		// open and check what stands at its path now, as at the start.
		path := filepath.Dir(f.absPath())
		dir, err := openDir(path)
		if err == nil {
			if err = checkDir(dir, path, f.cfg.User); err != nil {
				unix.Close(dir)
			}
		}
		if err != nil {
			return err
		}
		unix.Close(f.dir)
		f.dir = dir
	}
	fd, was, err := f.openName()
	if was != "" {
		// A program that keeps doing it must not flood our log: the 1st,
		// 2nd, 4th, 8th … time is reported, with the count.
		f.removals++
		if f.removals&(f.removals-1) == 0 {
			f.cfg.Logger.Warn("log file: removed what stood at its name", "path", f.cfg.Path, "was", was, "times", f.removals)
		}
	}
	if err != nil {
		return fmt.Errorf("log file %s: %w", f.cfg.Path, err)
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
	return f.writeLineLocked(l)
}

// stampLayout is the time a stamped line starts with: fixed width, so the
// lines of a file line up.
const stampLayout = "2006-01-02T15:04:05.000000000Z"

func (f *File) writeLineLocked(l Line) error {
	var errs []error
	n := int64(len(l.Text)) + 1
	if f.cfg.Timestamps {
		n += int64(len(stampLayout)) + 1
	}
	if max := f.maxSize(); max > 0 && f.size > 0 && f.size+n > max {
		errs = append(errs, f.flushLocked(), f.rotateLocked())
	} else if len(f.buf) > 0 && len(f.buf)+int(n) > f.cfg.BufferSize {
		errs = append(errs, f.flushLocked())
	}
	if f.cfg.Timestamps {
		f.buf = l.Time.UTC().AppendFormat(f.buf, stampLayout)
		f.buf = append(f.buf, ' ')
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
	err := f.writeOutLocked(f.buf)
	f.buf = f.buf[:0]
	if cap(f.buf) > 4*f.cfg.BufferSize {
		f.buf = make([]byte, 0, f.cfg.BufferSize) // one huge line grew it
	}
	return err
}

// writeOutLocked writes b (one or two pieces, written with one call),
// whole lines already counted in size, to the file, (re)opening it first
// when needed; what could not be written is dropped and accounted. The
// file ends inside a line afterwards when the last piece does not end
// with a newline (appendLocked keeps that line's rest).
func (f *File) writeOutLocked(b ...[]byte) error {
	var err error
	lost := 0
	for _, p := range b {
		lost += len(p)
	}
	if f.f != nil && !f.through && unlinked(f.f) {
		// Its name was removed (by the program, or a cleanup): writing
		// on would put the lines where no one can read them. A line the
		// file ends inside is finished there first: its rest must not
		// begin the new file.
		if f.midLine {
			var head [][]byte
			head, b = cutAfterLine(b)
			n, herr := writeAll(f.f, head)
			lost -= n
			f.midLine = false
			if len(b) == 0 {
				f.size -= int64(lost)
				return f.account(herr, lost)
			}
		}
		f.f.Close()
		f.f = nil
	}
	if f.f == nil {
		err = f.openLocked()
	}
	if err == nil {
		var n int
		n, err = writeAll(f.f, b)
		lost -= n
		if err != nil {
			err = fmt.Errorf("log file %s: %w", f.cfg.Path, err)
		}
	}
	last := b[len(b)-1]
	f.midLine = err == nil && len(last) > 0 && last[len(last)-1] != '\n'
	f.size -= int64(lost)
	return f.account(err, lost)
}

// cutAfterLine splits the pieces of b after their first newline.
func cutAfterLine(b [][]byte) (head, tail [][]byte) {
	for i, p := range b {
		if k := bytes.IndexByte(p, '\n'); k >= 0 {
			head = append(append(head, b[:i]...), p[:k+1])
			if k+1 < len(p) {
				tail = append(tail, p[k+1:])
			}
			return head, append(tail, b[i+1:]...)
		}
	}
	return b, nil
}

// writeAll writes the pieces of b in order, with one writev when they fit
// one call.
func writeAll(f *os.File, b [][]byte) (int, error) {
	if len(b) == 1 {
		return f.Write(b[0])
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for {
			n, werr = unix.Writev(int(fd), b)
			if werr != unix.EINTR {
				return true
			}
		}
	})
	if err == nil {
		err = werr
	}
	n = max(n, 0)
	if err != nil {
		return n, err
	}
	total := n
	for _, p := range b { // a short write: the rest one piece at a time
		if n >= len(p) {
			n -= len(p)
			continue
		}
		m, err := f.Write(p[n:])
		total += m
		if err != nil {
			return total, err
		}
		n = 0
	}
	return total, nil
}

// WriteChunk appends the lines of c: with one write when they do not fit
// the buffer (a fast writer's read goes to the file as it came), rotating
// between lines as WriteLine does, so that no file passes MaxSize but for
// a single line longer than it, which gets a file of its own.
func (f *File) WriteChunk(c *Chunk) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("log file %s: lines after close: %w", f.cfg.Path, ErrClosed)
	}
	if f.cfg.Timestamps { // a stamp per line: the line path
		return c.EachLine(f.writeLineLocked)
	}
	var errs []error
	data := c.Data
	for len(data) > 0 {
		part := data
		if max := f.maxSize(); max > 0 && f.size+int64(len(part)) > max {
			cut := -1
			if room := max - f.size; room > 0 {
				cut = bytes.LastIndexByte(part[:min(room, int64(len(part)))], '\n')
			}
			switch {
			case cut >= 0: // the lines that fit
				part = part[:cut+1]
			case f.size > 0: // not one more line fits
				errs = append(errs, f.flushLocked(), f.rotateLocked())
				continue
			default: // an empty file, and a line longer than MaxSize
				part = part[:bytes.IndexByte(part, '\n')+1]
			}
		}
		errs = append(errs, f.appendLocked(part))
		data = data[len(part):]
	}
	return errors.Join(errs...)
}

// writeAlign is where a fast writer's writes end in the file: writes
// ending at multiples of 64 KiB cost the kernel a quarter less than the
// same bytes ending anywhere (a page cache of whole large pages).
const writeAlign = 64 << 10

// appendLocked adds whole lines to the file: into the buffer when they
// fit, else straight to the file after what the buffer holds.
//
// With a buffer of writeAlign or more (the default), when the buffer and
// b reach its size the write ends at the last multiple of writeAlign in
// the file, and the rest waits in the buffer: the file ends inside a line
// until the next write or flush, which its pump does as soon as its pipe
// is empty. A flush, a rotation, a reopen and Close write the buffer whole
// first, and a file that ends inside a line is never replaced.
//
// With a smaller buffer, lines of at least half of it that find it empty
// go straight to the file, not copied into the buffer first.
func (f *File) appendLocked(b []byte) error {
	f.size += int64(len(b))
	aligned := f.cfg.BufferSize >= writeAlign
	switch {
	case aligned && len(f.buf)+len(b) >= f.cfg.BufferSize:
		return f.writeAlignedLocked(b)
	case !aligned && len(f.buf) == 0 && len(b) >= f.cfg.BufferSize/2:
		return f.writeOutLocked(b)
	}
	if len(f.buf)+len(b) <= f.cfg.BufferSize {
		f.buf = append(f.buf, b...)
		if len(f.buf) >= f.cfg.BufferSize {
			return f.flushLocked()
		}
		return nil
	}
	return errors.Join(f.flushLocked(), f.writeOutLocked(b))
}

// writeAlignedLocked writes the buffer and b up to the last multiple of
// writeAlign in the file, and keeps the rest (less than writeAlign, so
// within the buffer's size) in the buffer.
func (f *File) writeAlignedLocked(b []byte) error {
	end := f.size
	start := end - int64(len(f.buf)+len(b)) // what the file holds
	cut := int(end&^(writeAlign-1) - start) // of buf and b, written now
	var err error
	switch {
	case cut <= 0: // cannot be: buf and b span writeAlign
		return errors.Join(f.flushLocked(), f.writeOutLocked(b))
	case cut <= len(f.buf):
		err = f.writeOutLocked(f.buf[:cut])
		n := copy(f.buf, f.buf[cut:])
		f.buf = append(f.buf[:n], b...)
	default:
		k := cut - len(f.buf)
		if len(f.buf) == 0 {
			err = f.writeOutLocked(b[:k])
		} else {
			err = f.writeOutLocked(f.buf, b[:k])
		}
		f.buf = append(f.buf[:0], b[k:]...)
	}
	return err
}

// account keeps a failure episode to one report: its first error is
// returned (and logged), later ones only add to the bytes lost, and the
// first write that works again logs the total.
func (f *File) account(err error, lost int) error {
	if err == nil {
		if f.failing {
			f.cfg.Logger.Warn("log file: writes work again", "path", f.cfg.Path, "lost_bytes", f.lost)
			f.failing, f.lost = false, 0
		}
		return nil
	}
	f.lost += int64(lost)
	if f.failing {
		return nil
	}
	f.failing = true
	f.cfg.Logger.Warn("log file: writes failing; lines are dropped until they work again", "path", f.cfg.Path, "err", err)
	return err
}

// rotateLocked shifts Path.i to Path.i+1, Path to Path.1, dropping the
// oldest, and starts an empty Path, all by name inside the directory's
// descriptor. The buffer must be empty. When Path cannot be moved away
// (the program put a directory at Path.1), the current file is emptied
// instead, so max_size holds whatever stands at the names; the name Path
// is never opened again through anything the program made.
func (f *File) rotateLocked() error {
	var errs []error
	p := f.base
	moved := false
	// Only our own file is moved to Path.1: whatever else stands at Path
	// now (the program swapped it) is left for openLocked to replace.
	ours := f.f != nil && atName(f.dir, f.base, f.f)
	for i := f.cfg.MaxFiles - 1; i >= 1; i-- {
		if i == 1 && !ours {
			break
		}
		from := p
		if i > 1 {
			from = p + "." + strconv.Itoa(i-1)
		}
		// Renaming onto Path.<MaxFiles-1> replaces the oldest file.
		err := unix.Renameat(f.dir, from, f.dir, p+"."+strconv.Itoa(i))
		if err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("renaming %s: %w", from, err))
		}
		if i == 1 && err == nil {
			moved = true
		}
	}
	if !f.cleaned {
		// Once is enough: no one else makes numbered files.
		errs = append(errs, f.removeExtraLocked())
		f.cleaned = true
	}
	f.size = 0
	switch {
	case moved || !ours:
		if f.f != nil {
			errs = append(errs, f.f.Close())
			f.f = nil
		}
		errs = append(errs, f.openLocked())
	default:
		// MaxFiles is 1, or Path could not be moved: start it over.
		if err := f.f.Truncate(0); err != nil {
			errs = append(errs, fmt.Errorf("emptying: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("rotating %s: %w", f.cfg.Path, err)
	}
	return nil
}

// removeExtraLocked removes rotated files numbered MaxFiles or more, left
// by an earlier, larger MaxFiles.
func (f *File) removeExtraLocked() error {
	names, err := readNames(f.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		suffix, ok := strings.CutPrefix(name, f.base+".")
		if !ok {
			continue
		}
		if i, err := strconv.Atoi(suffix); err == nil && i >= f.cfg.MaxFiles && strconv.Itoa(i) == suffix {
			if err := unix.Unlinkat(f.dir, name, 0); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EISDIR) {
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
	if f.failing {
		f.cfg.Logger.Warn("log file: closed while writes were failing", "path", f.cfg.Path, "lost_bytes", f.lost)
	}
	unix.Close(f.dir)
	return err
}
