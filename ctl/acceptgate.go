package ctl

import (
	"errors"
	"net"
	"sync"
	"time"
)

// acceptGate is the control socket's listener, whose accepting an
// upgrade in place pauses before the exec: a connection accepted then
// would be closed by the exec unanswered, while one left in the kernel's
// backlog is the new binary's to accept (the listening socket is
// inherited). Paused, Accept waits without taking a connection; the
// accept under way is cut short by a deadline.
type acceptGate struct {
	deadlineListener

	mu      sync.Mutex
	paused  bool
	parked  bool          // an Accept waits, paused
	resumed chan struct{} // closed by resume
	closed  chan struct{} // closed by Close
	once    sync.Once
}

// deadlineListener is a listener whose Accept a deadline cuts short
// (*net.UnixListener, *net.TCPListener).
type deadlineListener interface {
	net.Listener
	SetDeadline(time.Time) error
}

func newAcceptGate(ln deadlineListener) *acceptGate {
	return &acceptGate{deadlineListener: ln, closed: make(chan struct{})}
}

// Accept is the listener's, but for the pause.
func (g *acceptGate) Accept() (net.Conn, error) {
	for {
		if err := g.waitResumed(); err != nil {
			return nil, err
		}
		c, err := g.deadlineListener.Accept()
		if err == nil {
			return c, nil
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			continue // a pause cut it short: only pause sets a deadline
		}
		return nil, err
	}
}

// waitResumed returns at once when not paused; paused, it waits (parked)
// until resume or Close.
func (g *acceptGate) waitResumed() error {
	g.mu.Lock()
	if !g.paused {
		g.mu.Unlock()
		return nil
	}
	g.parked = true
	resumed := g.resumed
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.parked = false
		g.mu.Unlock()
	}()
	select {
	case <-resumed:
		return nil
	case <-g.closed:
		return net.ErrClosed
	}
}

// pause stops accepting and cuts short the accept under way; it returns
// once Accept is parked (every connection taken so far handed to the
// server, which has seen it: ConnState's StateNew comes before the next
// Accept) or at deadline, saying which.
func (g *acceptGate) pause(deadline time.Time) bool {
	g.mu.Lock()
	if !g.paused {
		g.paused = true
		g.resumed = make(chan struct{})
	}
	g.mu.Unlock()
	_ = g.deadlineListener.SetDeadline(time.Now())
	for {
		g.mu.Lock()
		parked := g.parked
		g.mu.Unlock()
		select {
		case <-g.closed:
			return true
		default:
		}
		if parked {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// resume accepts again after pause.
func (g *acceptGate) resume() {
	_ = g.deadlineListener.SetDeadline(time.Time{})
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused {
		g.paused = false
		close(g.resumed)
	}
}

// Close closes the listener and ends a parked Accept.
func (g *acceptGate) Close() error {
	g.once.Do(func() { close(g.closed) })
	return g.deadlineListener.Close()
}
