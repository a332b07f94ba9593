package notify

import (
	"bytes"
	"fmt"
	"os"
	"sync"
)

// FD is s6-style readiness: the program writes a newline to a descriptor
// it was given (notification-fd) once it is ready, and usually closes it.
type FD struct {
	r     *os.File
	ready chan struct{}
	done  chan struct{}
	once  sync.Once
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
	f := &FD{r: r, ready: make(chan struct{}), done: make(chan struct{})}
	go f.read()
	return f, w, nil
}

// Ready is closed when the program wrote a newline. A program that closes
// the descriptor (or exits) without one never becomes ready through it.
func (f *FD) Ready() <-chan struct{} { return f.ready }

// Close stops reading and closes the read end; it returns once the reading
// goroutine exited. It may be called more than once.
func (f *FD) Close() error {
	var err error
	f.once.Do(func() { err = f.r.Close() })
	<-f.done
	return err
}

func (f *FD) read() {
	defer close(f.done)
	buf := make([]byte, 512)
	ready := false
	for {
		n, err := f.r.Read(buf)
		if !ready && bytes.IndexByte(buf[:n], '\n') >= 0 {
			ready = true
			close(f.ready)
		}
		if err != nil {
			return // EOF: every writer closed; or Close
		}
	}
}
