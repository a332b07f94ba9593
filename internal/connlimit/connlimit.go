// Package connlimit bounds the connections a listener hands to its server.
//
// A server that runs as root must not let clients take every descriptor it
// has: those are the pipes, sockets and cgroup files of the programs it
// starts. A Listener admits at most a fixed number of connections at once;
// one over is accepted, given a canned reply (an HTTP 503) and closed, so a
// client gets an answer instead of hanging in the backlog.
package connlimit

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

// maxRefusers bounds the refusals under way at once; past it, connections
// over the limit are closed without a word.
const maxRefusers = 8

// Listener admits at most Max connections at once. The refusal reads what
// the client sent first, for a reply to a request whose bytes are unread is
// lost to a reset; each takes at most a second.
type Listener struct {
	net.Listener
	slots    chan struct{}
	refusers chan struct{}
	refusing sync.WaitGroup // Close waits for the refusals under way
	reply    string
	what     string
	log      *slog.Logger

	refused atomic.Int64 // connections refused in the current episode
}

// New wraps ln. what names the listener in the log lines ("control
// socket"); contentType and body make the 503 reply.
func New(ln net.Listener, max int, what, contentType, body string, log *slog.Logger) *Listener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Listener{
		Listener: ln,
		slots:    make(chan struct{}, max),
		refusers: make(chan struct{}, maxRefusers),
		reply:    Reply503(contentType, body),
		what:     what,
		log:      log,
	}
}

// Reply503 is a complete HTTP/1.1 503 response with body.
func Reply503(contentType, body string) string {
	return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: " + contentType + "\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// Accept returns the next connection while there is room; it refuses
// those over the limit itself, and says once per episode that it does.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			if n := l.refused.Swap(0); n > 0 {
				l.log.Info(l.what+": accepting connections again", "refused", n)
			}
			return &conn{Conn: c, release: func() { <-l.slots }}, nil
		default:
		}
		if l.refused.Add(1) == 1 {
			l.log.Warn(l.what+": connection limit reached, refusing new connections", "limit", cap(l.slots))
		}
		select {
		case l.refusers <- struct{}{}:
			l.refusing.Go(func() {
				refuse(c, l.reply)
				<-l.refusers
			})
		default:
			c.Close()
		}
	}
}

// refuse reads the request's header, answers and closes, within a second
// whatever the client does.
func refuse(c net.Conn, reply string) {
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
	if _, err := io.WriteString(c, reply); err != nil {
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
func (l *Listener) Close() error {
	err := l.Listener.Close()
	l.refusing.Wait()
	return err
}

// conn gives its slot back on the first Close.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// NetConn returns the connection that was accepted, for what needs its
// concrete type (the peer credentials of a unix socket).
func (c *conn) NetConn() net.Conn { return c.Conn }
