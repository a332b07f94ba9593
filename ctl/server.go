package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/user"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/supervise-dev/supervise/internal/connlimit"
)

// ServerConfig configures a [Server]. Path and Backend are required.
type ServerConfig struct {
	// Path of the unix socket.
	Path string
	// Mode of the socket file: 0600 by default, 0660 when Group is set.
	Mode os.FileMode
	// Group (a name or a numeric gid), when set, owns the socket and its
	// members are admitted besides root and the server's own uid.
	Group string
	// Backend does the work.
	Backend Backend
	// Logger receives the server's own logs; nil discards them.
	Logger *slog.Logger

	// ReadHeaderTimeout bounds reading a request header (default 5s), so a
	// half-written request cannot hold a connection.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included (default 10s).
	ReadTimeout time.Duration
	// WriteTimeout bounds each write to a client: a reply, or one item of a
	// stream (default 10s). A client that stops reading a stream is dropped.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection idle this long (default 60s).
	IdleTimeout time.Duration

	// MaxConns bounds the connections open at once (default 256); one
	// more is answered 503 and closed.
	MaxConns int
	// MaxFollowers bounds the following streams at once (default 64);
	// one more is answered 503.
	MaxFollowers int

	// OnRequest, when set, is called as each request comes in, before it
	// is admitted; it must return at once.
	OnRequest func()
}

// Server serves a [Backend] on a unix socket. Call Listen, then Serve; Close
// removes the socket.
type Server struct {
	cfg ServerConfig
	log *slog.Logger
	uid int // the server's own uid, always admitted

	mu       sync.Mutex
	ln       *net.UnixListener // guarded by mu; set by Listen
	gate     *acceptGate       // guarded by mu; ln, as Serve accepts on it
	others   []*acceptGate     // guarded by mu; other listeners' (TrackListener)
	sock     os.FileInfo       // guarded by mu; the socket file Listen created
	gid      int               // guarded by mu; the allowed group, -1 for none
	hs       *http.Server      // guarded by mu; set by Serve
	mux      *http.ServeMux    // the verbs' routes; set by NewServer
	closed   bool              // guarded by mu
	draining bool              // guarded by mu; no new handler may start
	handlers sync.WaitGroup    // Add only under mu while !draining

	// The commands under way, which an upgrade in place ends first
	// (resume.go): upCtx ends with it, with ErrUpgrading as cause.
	upgrading bool                    // guarded by mu; commands are refused
	upCtx     context.Context         // guarded by mu
	upCancel  context.CancelCauseFunc // guarded by mu
	inflight  map[string]int          // guarded by mu; commands under way, by verb
	// The socket's connections with a request under way (by the verb it
	// asked, once routed), and the upgrade's own (which stays busy
	// through the exec).
	busy        map[net.Conn]string // guarded by mu
	upgradeConn net.Conn            // guarded by mu

	followers     atomic.Int64 // following streams being served
	followRefused atomic.Int64 // streams refused since the limit was last reached
}

// NewServer returns a server for cfg; nothing happens until Listen.
func NewServer(cfg ServerConfig) *Server {
	if cfg.Mode == 0 {
		cfg.Mode = 0o600
		if cfg.Group != "" {
			cfg.Mode = 0o660
		}
	}
	setDefault(&cfg.ReadHeaderTimeout, 5*time.Second)
	setDefault(&cfg.ReadTimeout, 10*time.Second)
	setDefault(&cfg.WriteTimeout, 10*time.Second)
	setDefault(&cfg.IdleTimeout, 60*time.Second)
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 256
	}
	if cfg.MaxFollowers <= 0 {
		cfg.MaxFollowers = 64
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, uid: os.Getuid(), gid: -1}
	s.mux = s.routes()
	return s
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

// Listen creates the socket. A stale socket left by a dead supervisor is
// replaced; a live one is not ("supervise is already running on S", which
// matches [ErrAlreadyRunning]).
func (s *Server) Listen() error {
	gid, err := s.checkConfig()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ln != nil {
		return errors.New("control socket: Listen called twice or after Close")
	}
	if err := preparePrivateDir(s.cfg.Path); err != nil {
		return err
	}
	ln, info, err := listenUnix(s.cfg.Path, s.cfg.Mode, gid)
	if err != nil {
		return err
	}
	s.ln, s.sock, s.gid = ln, info, gid
	return nil
}

// Adopt serves on f, the listening control socket inherited across an
// upgrade in place, instead of binding a new one. The socket file at the
// path must be the one f is bound to (Close removes only that one). The
// listener is a copy: the caller still owns f.
func (s *Server) Adopt(f *os.File) error {
	gid, err := s.checkConfig()
	if err != nil {
		return err
	}
	fl, err := net.FileListener(f)
	if err != nil {
		return fmt.Errorf("control socket %s: adopting the inherited listener: %w", s.cfg.Path, err)
	}
	ln, ok := fl.(*net.UnixListener)
	if !ok {
		fl.Close()
		return fmt.Errorf("control socket %s: the inherited listener is not a unix socket", s.cfg.Path)
	}
	ln.SetUnlinkOnClose(false)
	info, err := os.Lstat(s.cfg.Path)
	if err != nil {
		ln.Close()
		return fmt.Errorf("control socket %s: %w", s.cfg.Path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ln != nil {
		ln.Close()
		return errors.New("control socket: Adopt called twice or after Close")
	}
	s.ln, s.sock, s.gid = ln, info, gid
	return nil
}

// ListenerFile is a duplicate of the listening socket, for a hand-over
// to a new binary across an execve; the caller closes it.
func (s *Server) ListenerFile() (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil, errors.New("control socket: not listening")
	}
	return s.ln.File()
}

// checkConfig checks what Listen and Adopt need and returns the gid of
// the socket's group (-1 for none).
func (s *Server) checkConfig() (int, error) {
	if s.cfg.Path == "" {
		return -1, errors.New("control socket: no path")
	}
	if s.cfg.Backend == nil {
		return -1, errors.New("control socket: no backend")
	}
	if s.cfg.Group == "" {
		return -1, nil
	}
	gid, err := lookupGroup(s.cfg.Group)
	if err != nil {
		return -1, fmt.Errorf("control socket %s: %w", s.cfg.Path, err)
	}
	return gid, nil
}

func lookupGroup(g string) (int, error) {
	if n, err := strconv.Atoi(g); err == nil && n >= 0 {
		return n, nil
	}
	grp, err := user.LookupGroup(g)
	if err != nil {
		return -1, fmt.Errorf("socket group: %w", err)
	}
	return strconv.Atoi(grp.Gid)
}

// Serve answers requests until ctx ends or Close is called, then returns
// once every handler has returned. Streams end and in-flight backend calls
// are cancelled when ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	base, cancelBase := context.WithCancel(ctx)
	defer cancelBase()
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnState:         s.connState,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			ctx = context.WithValue(ctx, connKey{}, c) // as ConnState names it
			if lc, ok := c.(interface{ NetConn() net.Conn }); ok {
				c = lc.NetConn()
			}
			return context.WithValue(ctx, peerKey{}, peerOf(c))
		},
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return errors.New("control socket: Serve after Close")
	case s.ln == nil:
		s.mu.Unlock()
		return errors.New("control socket: Serve before Listen")
	case s.hs != nil:
		s.mu.Unlock()
		return errors.New("control socket: Serve called twice")
	}
	s.hs = hs
	s.gate = newAcceptGate(s.ln)
	ln := connlimit.New(s.gate, s.cfg.MaxConns, "control socket", "application/json", tooManyBody, s.log)
	s.mu.Unlock()

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		errc = nil
	}
	// Streams and waiting commands end with base; then Shutdown only has
	// idle connections to close. The bound is for a handler stuck in a
	// backend that ignores its context.
	cancelBase()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if serr := hs.Shutdown(sctx); serr != nil {
		s.log.Warn("control socket: handlers did not end in time, closing their connections", "err", serr)
		hs.Close()
	}
	cancel()
	if errc != nil {
		err = <-errc
	}
	s.mu.Lock()
	s.draining = true
	closed := s.closed
	s.mu.Unlock()
	s.handlers.Wait()
	if errors.Is(err, http.ErrServerClosed) || closed {
		return nil
	}
	return err
}

// Close stops serving and removes the socket if it is still the one Listen
// created. It does not wait for Serve to return. It is safe to call more
// than once and concurrently with Serve.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ln, hs, sock := s.ln, s.hs, s.sock
	s.mu.Unlock()
	var err error
	if hs != nil {
		err = hs.Close() // closes ln too
	} else if ln != nil {
		err = ln.Close()
	}
	if sock != nil {
		// Only our own socket: a successor may already have replaced it.
		if cur, lerr := os.Lstat(s.cfg.Path); lerr == nil && os.SameFile(cur, sock) {
			if rerr := os.Remove(s.cfg.Path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = errors.Join(err, fmt.Errorf("removing control socket: %w", rerr))
			}
		}
	}
	return err
}

// peer is who is connected, as the kernel says.
type peer struct {
	uid, gid, pid int
	groups        []uint32 // supplementary groups, when the kernel tells
	err           error
}

type peerKey struct{}

type connKey struct{}

// admit decides whether p may use the socket.
func (s *Server) admit(p peer) error {
	if p.err != nil {
		return fmt.Errorf("%w: cannot identify the client: %v", ErrPermissionDenied, p.err)
	}
	s.mu.Lock()
	gid := s.gid
	s.mu.Unlock()
	if p.uid == 0 || p.uid == s.uid {
		return nil
	}
	if gid >= 0 && (p.gid == gid || slices.Contains(p.groups, uint32(gid))) {
		return nil
	}
	allowed := fmt.Sprintf("root and uid %d", s.uid)
	if gid >= 0 {
		allowed = fmt.Sprintf("root, uid %d and group %d", s.uid, gid)
	}
	return fmt.Errorf("%w: uid %d may not control the supervisor on %s (allowed: %s)",
		ErrPermissionDenied, p.uid, s.cfg.Path, allowed)
}

// ServeHTTP admits the peer and hands the request to the router.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.OnRequest != nil {
		s.cfg.OnRequest()
	}
	if !s.enter(w) {
		return
	}
	defer s.handlers.Done()
	defer func() {
		// net/http would recover too, but log it where nobody looks.
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			s.log.Error("control socket: handler panicked", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			panic(http.ErrAbortHandler) // drop the connection without another stack trace
		}
	}()

	p, _ := r.Context().Value(peerKey{}).(peer)
	if err := s.admit(p); err != nil {
		s.log.Warn("control socket: client refused", "uid", p.uid, "client_pid", p.pid, "err", err)
		s.reply(w, &apiError{Status: http.StatusForbidden, Code: codeForbidden, Msg: err.Error()})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// enter counts a handler in, for Serve to wait on; once the server
// drains, it answers 503 instead and returns false.
func (s *Server) enter(w http.ResponseWriter) bool {
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		s.reply(w, &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable, Msg: "supervise is shutting down"})
		return false
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	return true
}

// VerbHandler returns the verbs' routes (/v1/VERB) with the same JSON as
// the socket, for another listener that authenticates its clients itself
// (the HTTP listener's bearer token): no peer credentials are checked
// here. Following streams count against MaxFollowers with the socket's.
func (s *Server) VerbHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.enter(w) {
			return
		}
		defer s.handlers.Done()
		// No local peer: the logs say uid -1 rather than root's 0.
		s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), peerKey{}, peer{uid: -1, pid: -1})))
	})
}

// routes gives each verb of verbTable its route, "METHOD /v1/VERB". What
// no route takes — an unknown path or verb, a verb with the wrong method —
// gets the protocol's JSON error from unrouted, not ServeMux's text.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	for _, v := range verbTable {
		mux.Handle(v.pattern(), s.verb(v))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.reply(w, unrouted(r))
	})
	return mux
}

// verb decodes the request for v, logs it, admits a follower within the
// limit, and serves it with a context that ends with the request.
func (s *Server) verb(v *verbDef) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := r.Context().Value(peerKey{}).(peer)
		a, aerr := v.decode(r)
		if aerr != nil {
			s.log.Debug("control socket: bad request", "uid", p.uid, "path", r.URL.Path, "err", aerr)
			if aerr.Status == http.StatusRequestEntityTooLarge {
				w.Header().Set("Connection", "close") // the rest of the body is not worth reading
			}
			s.reply(w, aerr)
			return
		}
		level := slog.LevelInfo
		if r.Method == http.MethodGet { // status, logs, events: read-only and frequent
			level = slog.LevelDebug
		}
		s.log.Log(r.Context(), level, "control command", "verb", v.name, "names", a.programs(), "uid", p.uid, "client_pid", p.pid)
		if f, ok := a.(follower); ok && f.following() {
			release, aerr := s.follow(w, v.name, p)
			if aerr != nil {
				s.reply(w, aerr)
				return
			}
			defer release()
		}
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		s.routed(r, v.name)
		// The upgrade's own command stays: it execs the new binary.
		if v.name == "upgrade" {
			if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
				s.mu.Lock()
				s.upgradeConn = c
				s.mu.Unlock()
			}
		} else {
			up, ok := s.enterCommand(v.name)
			if !ok {
				s.replyNow(w, upgradingReply)
				return
			}
			defer s.leaveCommand(v.name)
			defer context.AfterFunc(up, func() { cancel(context.Cause(up)) })()
		}
		if err := v.serve.run(s, ctx, w, a); err != nil {
			if errors.Is(err, ErrUpgrading) || errors.Is(context.Cause(ctx), ErrUpgrading) {
				s.replyNow(w, upgradingError(err))
				return
			}
			s.reply(w, s.backendError(r.Context(), v.name, a.programs(), err))
		}
	})
}

// follow takes one of the MaxFollowers slots for a following stream, or
// says why not; release gives it back.
func (s *Server) follow(w http.ResponseWriter, verb string, p peer) (release func(), _ *apiError) {
	if n := s.followers.Add(1); n > int64(s.cfg.MaxFollowers) {
		s.followers.Add(-1)
		w.Header().Set("Connection", "close") // its slot is for someone else
		if s.followRefused.Add(1) == 1 {
			s.log.Warn("control socket: follower limit reached, refusing new streams", "verb", verb, "uid", p.uid, "limit", s.cfg.MaxFollowers)
		}
		return nil, &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable,
			Msg: fmt.Sprintf("too many followers: %d streams follow already ([supervisor] max_followers); try again later", s.cfg.MaxFollowers)}
	}
	if n := s.followRefused.Swap(0); n > 0 {
		s.log.Info("control socket: accepting followers again", "refused", n)
	}
	return func() { s.followers.Add(-1) }, nil
}

// streamItems writes what the backend sends on ch as newline-delimited
// JSON, flushing each item, until the backend closes ch, the client goes
// away or a write times out.
func streamItems[T any](s *Server, ctx context.Context, w http.ResponseWriter,
	verb string, ch <-chan T, wire func(T) any) {
	reqCtx := ctx
	ctx, cancel := context.WithCancel(ctx)
	if ch == nil { // a backend with nothing to say: an empty stream
		c := make(chan T)
		close(c)
		ch = c
	}
	// Whatever ends the stream, the backend is told (cancel) and its channel
	// emptied until it closes it, so its sending goroutine can exit.
	defer func() {
		// Cut short for an upgrade in place: the trailer says so, and the
		// client follows on with the new binary (a plain end is the end).
		// The request's context, not the stream's own: the backend sees
		// it end (and closes ch) before its children are cancelled.
		if errors.Is(context.Cause(reqCtx), ErrUpgrading) {
			w.Header().Set(upgradeTrailer, "1")
		}
		cancel()
		for range ch {
		}
	}()
	rc := http.NewResponseController(w)
	w.Header().Set("Trailer", upgradeTrailer)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	if err := rc.Flush(); err != nil {
		return
	}
	enc := json.NewEncoder(w)
	for {
		select {
		case v, ok := <-ch:
			if !ok {
				return
			}
			_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
			err := enc.Encode(wire(v))
			if err == nil {
				err = rc.Flush()
			}
			if err != nil {
				s.log.Debug("control socket: stream dropped", "verb", verb, "err", err)
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// backendError translates a backend error into the protocol's categories.
func (s *Server) backendError(reqCtx context.Context, verb string, names []string, err error) *apiError {
	switch {
	case errors.Is(err, ErrUnknownProgram):
		return &apiError{Status: http.StatusNotFound, Code: codeUnknownProgram, Msg: err.Error()}
	case errors.Is(err, ErrPermissionDenied):
		return &apiError{Status: http.StatusForbidden, Code: codeForbidden, Msg: err.Error()}
	case reqCtx.Err() != nil:
		// The client left or the server is stopping: nobody may read this.
		return &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable,
			Msg: fmt.Sprintf("%s interrupted: %v", verb, err)}
	}
	s.log.Warn("control command failed", "verb", verb, "names", names, "err", err)
	return &apiError{Status: http.StatusInternalServerError, Code: codeFailed, Msg: err.Error()}
}

func (s *Server) reply(w http.ResponseWriter, e *apiError) {
	if e.Status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodGet+", "+http.MethodPost)
	}
	s.writeJSON(w, e.Status, errorReply{Error: e.Msg, Code: e.Code, Resume: e.Resume})
}

// replyNow is reply, flushed to the connection before the handler
// returns: the exec of an upgrade may follow at once.
func (s *Server) replyNow(w http.ResponseWriter, e *apiError) {
	s.reply(w, e)
	_ = http.NewResponseController(w).Flush()
}

// writeStatus replies with the status array. A CPU figure that JSON cannot
// carry (NaN, an infinity) is sent as 0 rather than failing the reply.
func (s *Server) writeStatus(w http.ResponseWriter, st []ProgramStatus) {
	for i := range st {
		if f := st[i].CPUSeconds; math.IsNaN(f) || math.IsInf(f, 0) {
			st[i].CPUSeconds = 0
		}
	}
	s.writeJSON(w, http.StatusOK, st)
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Replies are fixed types that always encode; this is a backstop.
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorReply{Error: "encoding reply: " + err.Error(), Code: codeFailed})
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
