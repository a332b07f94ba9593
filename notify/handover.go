package notify

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Hand-over of a notify socket or descriptor to another supervise binary
// (an upgrade in place): reading stops at a message boundary, so what the
// program sends meanwhile waits in the kernel for the next reader, and
// the socket file is neither removed nor made again.

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func (s *Socket) readerDone() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// Resume starts reading the socket, on a new Messages channel: again after
// a Detach whose hand-over did not happen, or first after AdoptSocket. It
// waits for the reader Detach stopped, which returns once its messages
// are taken.
func (s *Socket) Resume() {
	<-s.readerDone()
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.conn.SetReadDeadline(time.Time{})
	s.messages, s.done = make(chan Message, 16), make(chan struct{})
	go s.read(s.messages, s.done)
}

// Detach stops reading at a datagram boundary: a read deadline in the past
// wakes the reader with nothing taken (a datagram is read whole or not at
// all), so what the program sends from then on waits in the socket. Every
// message already read is still delivered on Messages, which is then
// closed: the consumer must go on draining it. It returns another
// descriptor of the socket, the caller's, for the next binary; the
// socket file stays. Resume undoes it.
func (s *Socket) Detach(ctx context.Context) (*os.File, error) {
	// A socket fails this only once closed, its reader ended or ending.
	if err := s.conn.SetReadDeadline(time.Now()); err != nil {
		return nil, fmt.Errorf("notify socket %s: stopping its reader: %w", s.path, err)
	}
	select {
	case <-s.readerDone():
	case <-ctx.Done():
		return nil, fmt.Errorf("notify socket %s: stopping its reader: %w", s.path, ctx.Err())
	}
	f, err := s.conn.File()
	if err != nil {
		return nil, fmt.Errorf("notify socket %s: %w", s.path, err)
	}
	return f, nil
}

// Release closes our descriptor of the socket without removing its file,
// for a socket adopted by a take-over that gave up before reading it: the
// previous binary, which gets the programs back, holds it still.
func (s *Socket) Release() {
	s.once.Do(func() {
		close(s.closing)
		s.closeErr = s.conn.Close()
		<-s.readerDone()
	})
}

// AdoptSocket takes over the notify socket a previous supervise binary made
// with ListenPrivate below base and handed over as f: a unix datagram
// socket bound to path, a socket file named "notify" in a directory of
// ours right below base. Every part of that is checked (the state comes
// from another binary), since Close removes the file and its directory.
// The socket is returned detached: Resume starts reading. f stays the
// caller's (the socket has a descriptor of its own).
func AdoptSocket(base, path string, f *os.File) (*Socket, error) {
	dir := filepath.Dir(path)
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || filepath.Base(path) != "notify" || filepath.Dir(dir) != filepath.Clean(base) {
		return nil, fmt.Errorf("notify socket %q: not one of the private sockets below %s", path, base)
	}
	if err := checkSocket(f, path); err != nil {
		return nil, fmt.Errorf("notify socket %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != fs.ModeSocket {
		return nil, fmt.Errorf("notify socket %s: the file is gone or not a socket", path)
	}
	di, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("notify socket directory %s: %w", dir, err)
	}
	if st, ok := di.Sys().(*syscall.Stat_t); !ok || !di.IsDir() || int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("notify socket directory %s: not a directory of ours", dir)
	}
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("notify socket %s: %w", path, err)
	}
	conn, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("notify socket %s: not a unix socket", path)
	}
	// Kept by the socket across the exec; set again, as a bind would.
	if err := passCred(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("notify socket %s: SO_PASSCRED: %w", path, err)
	}
	return &Socket{conn: conn, path: path, dir: dir, closing: make(chan struct{}), done: closedChan()}, nil
}

// Detach stops reading the descriptor between two reads (a read deadline
// in the past), for a hand-over to another supervise binary: what the
// program writes from then on waits in the pipe. It returns the read end
// (still f's: a Resume reads it again) and whether the program said it is
// ready; no read end when every writer had closed it (nothing more can
// come).
func (f *FD) Detach(ctx context.Context) (*os.File, bool, error) {
	f.detaching.Store(true)
	if err := f.r.SetReadDeadline(time.Now()); err != nil {
		f.detaching.Store(false) // the reader reads on: Resume has nothing to do
		return nil, false, fmt.Errorf("notify fd: stopping its reader: %w", err)
	}
	select {
	case <-f.readerDone():
	case <-ctx.Done():
		return nil, false, fmt.Errorf("notify fd: stopping its reader: %w", ctx.Err())
	}
	f.mu.Lock()
	ended := f.ended
	f.mu.Unlock()
	if ended {
		return nil, f.isReady(), nil
	}
	return f.r, f.isReady(), nil
}

// Resume reads again after a Detach whose hand-over did not happen.
func (f *FD) Resume() {
	if !f.detaching.Load() {
		return // not stopped
	}
	<-f.readerDone()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return
	}
	f.start()
}

// AdoptFD takes over the read end r of a notify fd's pipe that a previous
// supervise binary handed over, ready if the program had said so.
func AdoptFD(r *os.File, ready bool) *FD {
	f := &FD{r: r, ready: make(chan struct{}), done: closedChan()}
	if ready {
		f.markReady()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.start()
	return f
}

// sinceMonotonic is the time since taken, a CLOCK_MONOTONIC reading of
// this boot (it goes on across an exec, unlike the wall clock it is never
// set); 0 when either reading is unknown.
func sinceMonotonic(taken int64) time.Duration {
	now := monotonicNow()
	if taken <= 0 || now < taken {
		return 0
	}
	return time.Duration(now - taken)
}
