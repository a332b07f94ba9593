package notify

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// FD is s6-style readiness: the program writes a newline to a descriptor
// it was given (notification-fd) once it is ready, and usually closes it.
type FD struct {
	r         *os.File
	ready     chan struct{}
	readyOnce sync.Once
	closeOnce sync.Once
	detaching atomic.Bool // a read deadline error is Detach's, not the end

	mu    sync.Mutex    // guards the two below
	done  chan struct{} // closed once the current reader returned
	ended bool          // the reader met the end: every writer closed
}

// NewFD makes the pipe. The write end is the program's: pass it to the
// child at the configured descriptor number, then close the supervisor's
// copy once the child is started (else the reader never sees EOF). The
// FD reads until a newline (ready), then drains and discards whatever
// follows, so a program that writes again never gets SIGPIPE.
func NewFD() (*FD, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("notify fd: %w", err)
	}
	f := &FD{r: r, ready: make(chan struct{})}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.start()
	return f, w, nil
}

// Ready is closed when the program wrote a newline. A program that closes
// the descriptor (or exits) without one never becomes ready through it.
func (f *FD) Ready() <-chan struct{} { return f.ready }

// Close stops reading and closes the read end; it returns once the reading
// goroutine exited. It may be called more than once.
func (f *FD) Close() error {
	var err error
	f.closeOnce.Do(func() { err = f.r.Close() })
	<-f.readerDone()
	return err
}

func (f *FD) isReady() bool {
	select {
	case <-f.ready:
		return true
	default:
		return false
	}
}

func (f *FD) markReady() { f.readyOnce.Do(func() { close(f.ready) }) }

func (f *FD) readerDone() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done
}

// start starts a reader (f.mu held).
func (f *FD) start() {
	f.detaching.Store(false)
	_ = f.r.SetReadDeadline(time.Time{}) // Detach's, when resumed
	f.done = make(chan struct{})
	go f.read(f.done)
}

func (f *FD) read(done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 512)
	for {
		n, err := f.r.Read(buf)
		if bytes.IndexByte(buf[:n], '\n') >= 0 {
			f.markReady()
		}
		if err != nil {
			if !f.detaching.Load() || !errors.Is(err, os.ErrDeadlineExceeded) {
				// EOF: every writer closed; or Close.
				f.mu.Lock()
				f.ended = true
				f.mu.Unlock()
			}
			return
		}
	}
}
