package logs

import (
	"errors"
	"time"
)

// Stream names of a program's output.
const (
	Stdout = "stdout"
	Stderr = "stderr"
	// StreamLagged marks the last line a ring follower receives when it fell
	// too far behind; its Text says how many lines it missed.
	StreamLagged = "lagged"
)

// Line is one line of a program's output, without its newline.
type Line struct {
	Program string
	Stream  string // Stdout or Stderr (a hook's output carries the hook's name)
	Time    time.Time
	Text    string
	// Partial is true when the line does not end with a newline in the
	// program's output: it was cut at the maximum line length (the next Line
	// continues it) or it was the last bytes before end of file.
	Partial bool
}

// Sink receives lines. WriteLine may block (that is the backpressure that
// slows a program down); it must not keep a reference to anything but the
// Line value. An error means the line could not be stored; the caller goes
// on with the next line.
type Sink interface {
	WriteLine(Line) error
}

// Flusher is implemented by sinks that buffer. A pump calls Flush whenever
// the pipe it reads has no more data for the moment.
type Flusher interface {
	Flush() error
}

// Multi returns a sink that writes each line to every sink in turn, and
// flushes those that are Flushers. Nil sinks are skipped. Every sink gets
// every line even when an earlier one fails; the errors are joined.
func Multi(sinks ...Sink) Sink {
	var m multi
	for _, s := range sinks {
		switch s := s.(type) {
		case nil:
		case multi:
			m = append(m, s...)
		default:
			m = append(m, s)
		}
	}
	if len(m) == 1 {
		return m[0]
	}
	return m
}

type multi []Sink

func (m multi) WriteLine(l Line) error {
	var errs []error
	for _, s := range m {
		if err := s.WriteLine(l); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m multi) Flush() error {
	var errs []error
	for _, s := range m {
		if f, ok := s.(Flusher); ok {
			if err := f.Flush(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// flush flushes s if it buffers.
func flush(s Sink) error {
	if f, ok := s.(Flusher); ok {
		return f.Flush()
	}
	return nil
}
