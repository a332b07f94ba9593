package logs

import (
	"errors"
	"sync"
	"time"
)

// ErrClosed is returned by writes to a closed LineWriter.
var ErrClosed = errors.New("logs: writer closed")

// LineWriter is an io.WriteCloser that splits what is written to it into
// lines for a sink, for output that arrives through Write calls rather than
// a pipe (a hook's output from os/exec, say). Safe for concurrent use.
// Close emits a last line that has no newline, and flushes the sink.
type LineWriter struct {
	sink Sink
	cfg  PumpConfig

	mu     sync.Mutex
	sp     *splitter // guarded by mu
	now    time.Time // guarded by mu
	closed bool      // guarded by mu
	err    error     // first sink error since the last Write; guarded by mu
}

// NewLineWriter returns a writer whose lines go to sink, named and cut as
// cfg says (cfg.Logger is not used: errors are returned by Write).
func NewLineWriter(sink Sink, cfg PumpConfig) *LineWriter {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	w := &LineWriter{sink: sink, cfg: cfg}
	w.sp = newSplitter(cfg.MaxLineLength, w.emit)
	return w
}

// Write emits every line p completes. It reports the first sink error, but
// always consumes all of p: the rest of the output is still worth writing.
func (w *LineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrClosed
	}
	w.now, w.err = w.cfg.Now(), nil
	w.sp.write(p)
	if err := flush(w.sink); err != nil && w.err == nil {
		w.err = err
	}
	return len(p), w.err
}

// Close emits the unterminated rest, if any, and flushes the sink.
func (w *LineWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed, w.err = true, nil
	w.sp.finish()
	if err := flush(w.sink); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}

func (w *LineWriter) emit(text []byte, partial bool) {
	err := w.sink.WriteLine(Line{Program: w.cfg.Program, Stream: w.cfg.Stream, Time: w.now, Text: string(text), Partial: partial})
	if err != nil && w.err == nil {
		w.err = err
	}
}
