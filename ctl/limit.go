package ctl

import (
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// limitListener admits at most cap(slots) connections at once. One over is
// accepted, told "too many connections" in a canned HTTP reply and closed
// at once: the client gets an answer instead of hanging in the backlog, and
// the descriptor is back before the next accept. Descriptors held by
// clients would otherwise be taken from starting programs (pipes,
// sockets, cgroup files).
type limitListener struct {
	net.Listener
	slots chan struct{}
	log   *slog.Logger

	refused atomic.Int64 // connections refused in the current episode
}

func newLimitListener(ln net.Listener, max int, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, max), log: log}
}

// tooManyReply is a complete HTTP/1.1 response the client's transport turns
// into a ServerError with code "unavailable".
const tooManyBody = `{"error":"too many control connections: the supervisor's limit ([supervisor] max_connections) is reached; try again","code":"unavailable"}` + "\n"

var tooManyReply = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
	strconv.Itoa(len(tooManyBody)) + "\r\n\r\n" + tooManyBody

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			if n := l.refused.Swap(0); n > 0 {
				l.log.Info("control socket: accepting connections again", "refused", n)
			}
			return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
		}
		if l.refused.Add(1) == 1 {
			l.log.Warn("control socket: connection limit reached, refusing new connections", "limit", cap(l.slots))
		}
		// The reply fits in the socket buffer; the deadline is for a
		// peer that shrank it.
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = io.WriteString(c, tooManyReply)
		c.Close()
	}
}

// limitConn gives its slot back on the first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
