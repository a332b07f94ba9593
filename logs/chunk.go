package logs

import (
	"errors"
	"strings"
	"time"
)

// Chunk is the whole lines one read of a program's stream brought: the
// pump's fast path. Sinks that implement ChunkSink take it as it is (a
// file writes it with one call); the others get its lines one by one.
type Chunk struct {
	Program string
	Stream  string
	Time    time.Time
	// Data is one or more complete lines, each ending in '\n', none longer
	// than the pump's maximum line length. It is valid only during the
	// call: a sink that keeps any of it copies it.
	Data []byte

	text  string // Data as a string, made once for the sinks that need lines
	lines int    // the lines in Data when the pump counted them, else 0
}

// ChunkSink is a Sink that takes whole lines in bulk.
type ChunkSink interface {
	Sink
	WriteChunk(c *Chunk) error
}

// String returns Data as a string, copied once and shared by every caller:
// the lines a sink keeps are slices of it, one allocation per chunk rather
// than one per line.
func (c *Chunk) String() string {
	if c.text == "" && len(c.Data) > 0 {
		c.text = string(c.Data)
	}
	return c.text
}

// EachLine calls fn with each line of c, in order, without its newline.
// The texts share c.String(). Every line is offered even when fn fails;
// the errors are joined.
func (c *Chunk) EachLine(fn func(Line) error) error {
	return eachLine(c.String(), func(text string) error {
		return fn(Line{Program: c.Program, Stream: c.Stream, Time: c.Time, Text: text})
	})
}

func eachLine(s string, fn func(string) error) error {
	var errs []error
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 { // not a chunk's shape; taken as a last line all the same
			i = len(s)
		}
		if err := fn(s[:i]); err != nil {
			errs = append(errs, err)
		}
		s = s[min(i+1, len(s)):]
	}
	return errors.Join(errs...)
}

// writeChunk hands c to s: whole when s takes chunks, else line by line.
func writeChunk(s Sink, c *Chunk) error {
	if cs, ok := s.(ChunkSink); ok {
		return cs.WriteChunk(c)
	}
	return c.EachLine(s.WriteLine)
}

func (m multi) WriteChunk(c *Chunk) error {
	var errs []error
	for _, s := range m {
		if err := writeChunk(s, c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
