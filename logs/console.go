package logs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"unsafe"
)

// ColorMode says whether the console colours program names.
type ColorMode int

const (
	ColorAuto   ColorMode = iota // colour when the writer is a terminal
	ColorAlways                  // always colour
	ColorNever                   // never colour
)

// DefaultConsoleBuffer is the console's buffer size when none is set.
const DefaultConsoleBuffer = 32 << 10

// palette holds the colours given to programs in the order they become
// known; red comes last as it reads as an error.
var palette = [...]string{"36", "33", "32", "35", "34", "96", "93", "92", "95", "94", "31", "91"}

// ConsoleConfig configures a Console. Zero fields get defaults.
type ConsoleConfig struct {
	Color ColorMode
	// Names lists the programs known in advance, so that names are padded
	// to a common width from the first line and colours follow this order.
	// Programs not listed are added as their first line arrives.
	Names []string
	// BufferSize is how many bytes are collected before a write; default
	// DefaultConsoleBuffer. A line longer than that is written alone.
	BufferSize int
	// Terminal says the writer is a terminal: the bytes of program lines
	// that would drive it (ESC sequences but colours, other controls) are
	// written escaped. Elsewhere (a pipe, a file) lines go as they are.
	Terminal bool
	// Timestamps starts each line with the time it was read (HH:MM:SS),
	// as foreman does.
	Timestamps bool
}

// Console is a sink that writes "name | text" lines to one writer, the
// supervisor's stdout. Lines of many programs never interleave inside a
// line: each is formatted under one mutex, and every write to the writer
// holds whole lines only. Lines wait in a buffer until Flush (a pump
// flushes whenever its pipe is empty) or until the buffer is full.
//
// When the writer fails (a closed stdout), the lines in that write are
// dropped and the error is returned: the program must not block on a
// console nobody reads.
type Console struct {
	w          io.Writer
	color      bool
	terminal   bool // escape what would drive a terminal
	timestamps bool
	bufSize    int

	mu       sync.Mutex
	buf      []byte            // guarded by mu
	width    int               // widest name; guarded by mu
	prefixes map[string][]byte // formatted prefix per name; guarded by mu
	colors   map[string]string // guarded by mu
	closed   bool              // guarded by mu
}

// NewConsole returns a console writing to w. It never closes w.
func NewConsole(w io.Writer, cfg ConsoleConfig) *Console {
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = DefaultConsoleBuffer
	}
	c := &Console{
		w:          w,
		terminal:   cfg.Terminal,
		timestamps: cfg.Timestamps,
		bufSize:    cfg.BufferSize,
		buf:        make([]byte, 0, cfg.BufferSize),
		prefixes:   make(map[string][]byte),
		colors:     make(map[string]string),
	}
	switch cfg.Color {
	case ColorAlways:
		c.color = true
	case ColorAuto:
		c.color = IsTerminal(w)
	}
	for _, n := range cfg.Names {
		c.addLocked(n)
	}
	return c
}

// Colored reports whether the console colours names.
func (c *Console) Colored() bool { return c.color }

// Add makes a program known: its name counts for the padding width and it
// gets the next colour. Adding a known name does nothing.
func (c *Console) Add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(name)
}

func (c *Console) addLocked(name string) []byte {
	if p, ok := c.prefixes[name]; ok {
		return p
	}
	if _, ok := c.colors[name]; !ok {
		c.colors[name] = palette[len(c.colors)%len(palette)]
	}
	if len(name) > c.width {
		// Every prefix changes with the width: make them again lazily.
		c.width = len(name)
		clear(c.prefixes)
	}
	p := c.prefix(name)
	c.prefixes[name] = p
	return p
}

// prefix formats "name   | " for the current width.
func (c *Console) prefix(name string) []byte {
	var p []byte
	if c.color {
		p = append(p, "\x1b["...)
		p = append(p, c.colors[name]...)
		p = append(p, 'm')
	}
	p = append(p, name...)
	for range c.width - len(name) {
		p = append(p, ' ')
	}
	p = append(p, " |"...)
	if c.color {
		p = append(p, "\x1b[0m"...)
	}
	return append(p, ' ')
}

// WriteLine formats l and adds it to the buffer, writing the buffer first
// when l would not fit.
func (c *Console) WriteLine(l Line) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("console: line of %q after close: %w", l.Program, ErrClosed)
	}
	return c.appendLocked(c.prefixLocked(l.Program), l.Time, l.Text)
}

// WriteChunk formats the lines of c as WriteLine would, under one lock,
// reading them where they are.
func (c *Console) WriteChunk(ch *Chunk) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("console: lines of %q after close: %w", ch.Program, ErrClosed)
	}
	p := c.prefixLocked(ch.Program)
	var errs []error
	for data := ch.Data; len(data) > 0; {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			i = len(data)
		}
		// Read during the call only, never kept: no copy needed.
		text := unsafe.String(unsafe.SliceData(data), i)
		if err := c.appendLocked(p, ch.Time, text); err != nil {
			errs = append(errs, err)
		}
		data = data[min(i+1, len(data)):]
	}
	return errors.Join(errs...)
}

func (c *Console) prefixLocked(program string) []byte {
	p, ok := c.prefixes[program]
	if !ok {
		p = c.addLocked(program)
	}
	return p
}

// appendLocked adds one formatted line to the buffer, writing the buffer
// first when the line would not fit, and after when it is full.
func (c *Console) appendLocked(p []byte, t time.Time, text string) error {
	var err error
	if n := len(p) + len(text) + 1; len(c.buf) > 0 && len(c.buf)+n > c.bufSize {
		err = c.flushLocked()
	}
	if c.timestamps {
		if t.IsZero() {
			t = time.Now()
		}
		c.buf = t.AppendFormat(c.buf, "15:04:05 ")
	}
	c.buf = append(c.buf, p...)
	if c.terminal {
		c.buf = AppendTerminalSafe(c.buf, text, true)
	} else {
		c.buf = append(c.buf, text...)
	}
	c.buf = append(c.buf, '\n')
	if len(c.buf) >= c.bufSize {
		if ferr := c.flushLocked(); err == nil {
			err = ferr
		}
	}
	return err
}

// Write writes p as it is, after the lines already buffered: the
// supervisor's own log records go through here so that they neither
// interleave with program lines nor overtake them.
func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.buf) > 0 {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	return c.w.Write(p)
}

// Flush writes the buffered lines.
func (c *Console) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

func (c *Console) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.w.Write(c.buf)
	c.buf = c.buf[:0]
	if cap(c.buf) > 4*c.bufSize {
		// One huge line grew the buffer: do not keep it.
		c.buf = make([]byte, 0, c.bufSize)
	}
	if err != nil {
		return fmt.Errorf("console: writing lines: %w", err)
	}
	return nil
}

// Close flushes the console; lines written after Close are refused. The
// writer is not closed.
func (c *Console) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return c.flushLocked()
}
