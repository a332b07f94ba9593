package logs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// PumpConfig describes the stream a pump reads. Zero fields get defaults.
type PumpConfig struct {
	Program string
	Stream  string
	// MaxLineLength cuts longer lines into Partial chunks.
	// Default DefaultMaxLineLength.
	MaxLineLength int
	// Now stamps lines; default time.Now. All lines from one read share
	// one time: they reached the supervisor together.
	Now func() time.Time
	// Logger reports sink errors; default discards. The pump carries on
	// after a sink error, so that a full disk never stalls the program.
	Logger *slog.Logger
}

// Pump reads one stream to its end and writes its lines to a sink. It owns
// one goroutine, which ends at end of file or on a read error (such as the
// reader being closed under it), after a final flush.
type Pump struct {
	r    io.Reader
	sink Sink
	cfg  PumpConfig
	sp   *splitter
	// raw reads r when it is a file the runtime polls (a pipe, a
	// terminal's master): the pump then flushes its sink just before it
	// waits for more, and only then. Nil for other readers.
	raw    syscall.RawConn
	now    time.Time // time of the current read; used only by the pump goroutine
	after  func()    // run by the goroutine before it reports the end; set before start
	tty    bool      // r is a pseudo-terminal's master, which Program.Resize sizes; set before start
	err    error     // the read error; written before finished is closed
	lines  atomic.Int64
	finish chan struct{}

	// detaching asks the pump to stop at its next read without finishing
	// the line it has begun (Program.Detach); detached and pending say it
	// did, and what of that line it had read. Both are written before
	// finish is closed.
	detaching atomic.Bool
	detached  bool
	pending   []byte

	// Sink error accounting, used only by the pump goroutine.
	failing  bool
	failures int
}

// StartPump starts a goroutine that reads r to its end and writes each line
// to sink. It does not close r.
func StartPump(r io.Reader, sink Sink, cfg PumpConfig) *Pump {
	p := newPump(r, sink, cfg)
	go p.run()
	return p
}

func newPump(r io.Reader, sink Sink, cfg PumpConfig) *Pump {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pump{r: r, sink: sink, cfg: cfg, finish: make(chan struct{})}
	// Asked before the pump starts: clearing a deadline cannot undo a
	// Detach's yet. A file the runtime cannot poll refuses deadlines.
	if f, ok := r.(*os.File); ok && f.SetReadDeadline(time.Time{}) == nil {
		if rc, err := f.SyscallConn(); err == nil {
			p.raw = rc
		}
	}
	p.sp = newSplitter(cfg.MaxLineLength, p.emit)
	p.sp.chunk = p.emitChunk
	return p
}

// Finished returns a channel closed once the pump has written its last line
// and flushed its sink.
func (p *Pump) Finished() <-chan struct{} { return p.finish }

// Wait blocks until the pump has finished and returns the read error that
// ended it: nil at end of file or when the reader was closed on purpose.
func (p *Pump) Wait() error {
	<-p.finish
	return p.err
}

// Lines returns how many lines the pump has written so far.
func (p *Pump) Lines() int64 { return p.lines.Load() }

func (p *Pump) run() {
	defer close(p.finish)
	for {
		buf := p.sp.free()
		n, err := p.read(buf)
		if n > 0 {
			p.now = p.cfg.Now()
			p.sp.advance(n)
		}
		if err != nil && p.detaching.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
			p.pending = bytes.Clone(p.sp.buf[p.sp.start:p.sp.end])
			p.detached = true
			p.flush()
			break
		}
		if err != nil {
			// What is left was read with the last data: it keeps that time.
			p.sp.finish()
			p.flush()
			// A pseudo-terminal's master reads EIO once every slave
			// descriptor is closed: its end of file.
			if err != io.EOF && !errors.Is(err, os.ErrClosed) && !errors.Is(err, syscall.EIO) {
				p.err = err
			}
			break
		}
		// A polled file is flushed by read, when it is empty. Another
		// reader: flush only when it looks empty. A read that did not
		// fill the buffer took everything there was; one that filled it
		// may have too, and the program then be quiet: ask the pipe.
		if p.raw == nil && (n < len(buf) || p.drained()) {
			p.flush()
		}
	}
	if p.failures > 0 {
		p.cfg.Logger.Warn("program output: sink errors", "program", p.cfg.Program, "stream", p.cfg.Stream, "errors", p.failures)
	}
	if p.after != nil {
		p.after()
	}
}

// read reads into buf. From a polled file it flushes the sink when the
// file has nothing to read, just before waiting for it: a line never
// waits in a buffer while the program is quiet, and a program that keeps
// the pipe full has its lines written in large writes (see
// File.appendLocked) rather than one or two per read.
func (p *Pump) read(buf []byte) (int, error) {
	if p.raw == nil {
		return p.r.Read(buf)
	}
	var n int
	var rerr error
	flushed := false
	err := p.raw.Read(func(fd uintptr) bool {
		for {
			n, rerr = syscall.Read(int(fd), buf)
			if rerr != syscall.EINTR {
				break
			}
		}
		if rerr == syscall.EAGAIN {
			if !flushed {
				p.flush()
				flushed = true
			}
			return false // wait until it is readable, and call again
		}
		return true
	})
	switch {
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		return 0, err
	case err != nil:
		// The runtime's only other answer for a polled file: it was
		// closed under the read (Program.Close), as os.File.Read says.
		return 0, fmt.Errorf("%w: %v", os.ErrClosed, err)
	case rerr != nil:
		return 0, rerr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// drained reports whether nothing is left to read for now, after a read
// that filled its buffer: a pipe or a terminal is asked how much it
// holds. A reader that cannot be asked is taken as drained, so that no
// line waits in a buffer for output that may never come.
func (p *Pump) drained() bool {
	sc, ok := p.r.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	held, ierr := 0, error(nil)
	if err := rc.Control(func(fd uintptr) { held, ierr = unread(fd) }); err != nil || ierr != nil {
		return true
	}
	return held == 0
}

func (p *Pump) emit(text []byte, partial bool) {
	err := p.sink.WriteLine(Line{
		Program: p.cfg.Program,
		Stream:  p.cfg.Stream,
		Time:    p.now,
		Text:    string(text),
		Partial: partial,
	})
	p.lines.Add(1)
	p.result(err)
}

// emitChunk hands the complete lines of a read to the sink at once. A sink
// that only takes lines gets them one by one, each error counted.
func (p *Pump) emitChunk(lines []byte) {
	cs, ok := p.sink.(ChunkSink)
	if !ok {
		for len(lines) > 0 {
			i := bytes.IndexByte(lines, '\n')
			p.emit(lines[:i], false)
			lines = lines[i+1:]
		}
		return
	}
	n := bytes.Count(lines, newline)
	err := cs.WriteChunk(&Chunk{Program: p.cfg.Program, Stream: p.cfg.Stream, Time: p.now, Data: lines, lines: n})
	p.lines.Add(int64(n))
	p.result(err)
}

var newline = []byte{'\n'}

func (p *Pump) flush() { p.result(flush(p.sink)) }

// result logs the first error of a run of failures, so a broken disk is
// reported once, and again after it has worked in between.
func (p *Pump) result(err error) {
	if err == nil {
		p.failing = false
		return
	}
	p.failures++
	if !p.failing {
		p.failing = true
		p.cfg.Logger.Warn("program output: writing a line", "program", p.cfg.Program, "stream", p.cfg.Stream, "err", err)
	}
}
