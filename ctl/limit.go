package ctl

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// limitListener admits at most cap(slots) connections at once. One over is
// accepted, told "too many connections" in a canned HTTP reply and closed:
// the client gets an answer instead of hanging in the backlog. Descriptors
// held by clients would otherwise be taken from starting programs (pipes,
// sockets, cgroup files). The refusal reads what the client sent first, for
// a reply to a request whose bytes are unread is lost to a reset; at most
// cap(refusers) refusals are under way at once, each for at most a second,
// and more are closed without a word.
type limitListener struct {
	net.Listener
	slots    chan struct{}
	refusers chan struct{}
	refusing sync.WaitGroup // Close waits for the refusals under way
	log      *slog.Logger

	refused atomic.Int64 // connections refused in the current episode
}

func newLimitListener(ln net.Listener, max int, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, max), refusers: make(chan struct{}, 8), log: log}
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
		select {
		case l.refusers <- struct{}{}:
			l.refusing.Go(func() {
				refuse(c)
				<-l.refusers
			})
		default:
			c.Close()
		}
	}
}

// refuse reads the request's header, answers 503 and closes, within a
// second whatever the client does.
func refuse(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 4096)
	var seen []byte
	for len(seen) < 64<<10 && !bytes.Contains(seen, []byte("\r\n\r\n")) {
		n, err := c.Read(buf)
		seen = append(seen, buf[:n]...)
		if err != nil {
			break
		}
	}
	if _, err := io.WriteString(c, tooManyReply); err != nil {
		return
	}
	// Let a request body in flight arrive before the close, or the reply
	// could be lost to a reset.
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}
}

// Close stops accepting and waits for the refusals under way.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.refusing.Wait()
	return err
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
