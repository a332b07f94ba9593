// Package connlimit bounds the connections a listener hands to its server.
//
// A server that runs as root must not let clients take every descriptor it
// has: those are the pipes, sockets and cgroup files of the programs it
// starts. A Listener admits at most a fixed number of connections at once;
// one over is accepted, given a canned reply (an HTTP 503) and closed, so a
// client gets an answer instead of hanging in the backlog.
//
// With MakeRoom, a full listener admits a new connection by closing one
// that waits for a request (idle between requests, or still sending its
// first one) of the client holding the most: a client cannot keep others
// out by holding every slot, however it paces its requests.
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
	evicted atomic.Int64 // and closed to make room

	// With MakeRoom: who holds each connection, and whether it waits.
	peer  func(net.Conn) string
	mu    sync.Mutex
	conns map[*conn]struct{}
	seq   uint64 // orders the waits: lower waited longer
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

// MakeRoom has a full listener close a waiting connection for a new one
// rather than refuse it: the one that has waited longest among those of
// the client (as peer names it) holding the most, the newcomer counted.
// The server must report every connection's state to Waiting. Call it
// before the first Accept.
//
// A connection waits between requests, or while its first request is
// still arriving: closing it loses no reply (a client retries a request
// it sees closed before any answer, as HTTP lets a server close an idle
// connection at any time), and one slowly sending headers it will never
// finish is the very thing to drop.
func (l *Listener) MakeRoom(peer func(net.Conn) string) {
	l.peer = peer
	l.conns = make(map[*conn]struct{}, cap(l.slots))
}

// Waiting says whether c (a connection this listener returned) waits for
// a request (true), or has one being served (false).
func (l *Listener) Waiting(c net.Conn, waiting bool) {
	lc, ok := c.(*conn)
	if !ok || l.peer == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.conns[lc]; !ok || lc.waiting == waiting {
		return
	}
	lc.waiting = waiting
	if waiting {
		l.seq++
		lc.since = l.seq
	}
}

// Reply503 is a complete HTTP/1.1 503 response with body.
func Reply503(contentType, body string) string {
	return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: " + contentType + "\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// Accept returns the next connection while there is room, or room can be
// made; it refuses the others itself, and says once per episode that it
// does.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		var peer string
		if l.peer != nil {
			peer = l.peer(c)
		}
		select {
		case l.slots <- struct{}{}:
			refused, evicted := l.refused.Swap(0), l.evicted.Swap(0)
			if refused > 0 || evicted > 0 {
				l.log.Info(l.what+": accepting connections again", "refused", refused, "closed_waiting", evicted)
			}
			return l.admit(c, peer), nil
		default:
		}
		if l.peer != nil && l.evict(peer) {
			select {
			case l.slots <- struct{}{}:
				return l.admit(c, peer), nil
			default: // not expected: only Accept takes slots
			}
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

// admit wraps c; with MakeRoom it waits for its first request.
func (l *Listener) admit(c net.Conn, peer string) *conn {
	lc := &conn{Conn: c, l: l, peer: peer}
	if l.peer != nil {
		l.mu.Lock()
		l.seq++
		lc.waiting, lc.since = true, l.seq
		l.conns[lc] = struct{}{}
		l.mu.Unlock()
	}
	return lc
}

// evict closes the connection that has waited longest among those of the
// client holding the most that has one waiting, counting the newcomer's
// peer with one more. It reports whether it closed one.
func (l *Listener) evict(newcomer string) bool {
	l.mu.Lock()
	held := map[string]int{newcomer: 1}
	oldest := map[string]*conn{}
	for c := range l.conns {
		held[c.peer]++
		if o := oldest[c.peer]; c.waiting && (o == nil || c.since < o.since) {
			oldest[c.peer] = c
		}
	}
	var victim *conn
	for p, c := range oldest {
		if victim == nil || held[p] > held[victim.peer] || held[p] == held[victim.peer] && c.since < victim.since {
			victim = c
		}
	}
	if victim != nil {
		delete(l.conns, victim) // no other eviction picks it
	}
	l.mu.Unlock()
	if victim == nil {
		return false
	}
	if l.evicted.Add(1) == 1 {
		l.log.Warn(l.what+": connection limit reached, closing waiting connections of the client holding the most",
			"limit", cap(l.slots), "client", victim.peer, "held", held[victim.peer])
	}
	victim.Close() // gives its slot back now
	return true
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
	once sync.Once
	l    *Listener
	// With MakeRoom, under l.mu:
	peer    string
	waiting bool
	since   uint64
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		if c.l.peer != nil {
			c.l.mu.Lock()
			delete(c.l.conns, c)
			c.l.mu.Unlock()
		}
		<-c.l.slots
	})
	return err
}

// NetConn returns the connection that was accepted, for what needs its
// concrete type (the peer credentials of a unix socket).
func (c *conn) NetConn() net.Conn { return c.Conn }
