package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/supervise-dev/supervise/internal/connlimit"
	"github.com/supervise-dev/supervise/internal/sockowner"
)

// MaxConnections bounds the HTTP connections open at once. Scrapers and
// probes hold one or two each. When all are taken, a new connection makes
// room by closing one that waits for a request, of the client holding the
// most; when none waits, it is answered 503 and closed. So a flood cannot
// take the descriptors that starting programs need, and one client cannot
// keep a probe out.
const MaxConnections = 64

// maxNotReady bounds the names /readyz lists in its body.
const maxNotReady = 20

// Handler serves /metrics, /healthz and /readyz from src, the web
// console at / (console.go), and, once Control was called, the control
// verbs under /v1/ to the token's holder; it answers anything else 404
// and any other method but GET and HEAD 405.
type Handler struct {
	src   Source
	build Build
	pool  sync.Pool // *encoder: a scrape of a thousand programs is ~1 MiB
	controlState
}

// NewHandler returns the handler of src's figures.
func NewHandler(src Source, build Build) *Handler {
	return &Handler{src: src, build: build}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		h.serveControl(w, r)
		return
	}
	var serve func(http.ResponseWriter, *http.Request)
	switch r.URL.Path {
	case "/":
		serve = h.page
	case "/console.js", "/console.css":
		serve = h.asset
	case "/api/state":
		serve = h.state
	case "/api/logs":
		serve = h.logTail
	case "/metrics":
		serve = h.metrics
	case "/healthz", "/livez":
		serve = h.healthz
	case "/readyz":
		serve = h.readyz
	default:
		http.Error(w, "not found: this listener serves /, /metrics, /healthz and /readyz; commands go to the control socket", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: this listener is read-only", http.StatusMethodNotAllowed)
		return
	}
	serve(w, r)
}

func (h *Handler) metrics(w http.ResponseWriter, _ *http.Request) {
	e, _ := h.pool.Get().(*encoder)
	if e == nil {
		e = &encoder{}
	}
	e.b = e.b[:0]
	appendSnapshot(e, h.src.Snapshot(), h.build)
	appendGo(e)
	appendProcess(e)
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(e.b)))
	_, _ = w.Write(e.b)
	if cap(e.b) <= 16<<20 { // a pathological scrape's buffer is not kept
		h.pool.Put(e)
	}
}

func (h *Handler) healthz(w http.ResponseWriter, _ *http.Request) {
	if err := h.src.Healthy(); err != nil {
		http.Error(w, "unhealthy: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// readyz: 200 when every autostart instance is up (ready, or a one-shot
// that completed); with ?program=NAME, when every instance of the program
// NAME is, autostart or not, or the instance NAME ("web:1") is. Instances
// are named as status names them: "db" for a program of one instance.
func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("program")
	s := h.src.Snapshot()
	var notReady []string
	found := name != "" && slices.Contains(s.Empty, name)
	for i := range s.Programs {
		p := &s.Programs[i]
		if name != "" && p.Program != name && p.Name != name || name == "" && !p.Autostart {
			continue
		}
		found = true
		if !p.Up {
			notReady = append(notReady, p.Name+" ("+p.State+")")
		}
	}
	if name != "" && !found {
		http.Error(w, fmt.Sprintf("no program %q", name), http.StatusNotFound)
		return
	}
	if len(notReady) > 0 {
		msg := "not ready: " + strings.Join(notReady[:min(len(notReady), maxNotReady)], ", ")
		if len(notReady) > maxNotReady {
			msg += fmt.Sprintf(" and %d more", len(notReady)-maxNotReady)
		}
		http.Error(w, msg, http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// Server is the HTTP listener of a Handler.
type Server struct {
	ln  net.Listener
	tcp net.Listener // ln without the connection limit
	hs  *http.Server
	log *slog.Logger
}

// ListenerFile is a duplicate of the listening socket, for a hand-over
// to a new binary across an execve; the caller closes it.
func (s *Server) ListenerFile() (*os.File, error) {
	fl, ok := s.tcp.(interface{ File() (*os.File, error) })
	if !ok {
		return nil, fmt.Errorf("metrics: listener %T has no descriptor", s.tcp)
	}
	return fl.File()
}

// Listen binds addr (HOST:PORT). Nothing is served before Serve.
func Listen(addr string, h http.Handler, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listening on %s: %w", addr, err)
	}
	return ListenOn(ln, h, log), nil
}

// ListenOn serves h on ln, a listener already bound (one inherited
// across an upgrade in place). Nothing is served before Serve.
func ListenOn(ln net.Listener, h http.Handler, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{log: log, tcp: ln}
	s.build(ln, h, nil)
	return s
}

// build sets up serving h on ln (ln itself, or tcp wrapped by Track);
// connState, when set, hears each connection's state too.
func (s *Server) build(ln net.Listener, h http.Handler, connState func(net.Conn, http.ConnState)) {
	const body = "too many connections to the metrics listener; try again\n"
	limited := connlimit.New(ln, MaxConnections, "metrics listener", "text/plain; charset=utf-8", body, s.log)
	limited.MakeRoom(client)
	s.ln = limited
	s.hs = &http.Server{
		Handler: h,
		ConnState: func(c net.Conn, st http.ConnState) {
			// New: its first request is on the way; Idle: between
			// requests. Either may be closed to make room.
			limited.Waiting(c, st == http.StateNew || st == http.StateIdle)
			if connState != nil {
				connState(c, st)
			}
		},
		// A client that is slow to send its request, or idles, gives
		// its slot back soon.
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}

// Track hands the listener's accepting and its connections to another
// server's bookkeeping (the control server's, whose wait before an
// upgrade's exec covers them): track wraps the listener to accept on, and
// gives what hears each connection's state. Call it before Serve.
func (s *Server) Track(track func(net.Listener) (net.Listener, func(net.Conn, http.ConnState))) {
	ln, connState := track(s.tcp)
	s.build(ln, s.hs.Handler, connState)
}

// client names who holds c, for sharing the listener's slots: the local
// user for a client on this host (every local user shares 127.0.0.1), its
// address for any other.
func client(c net.Conn) string {
	if uid, ok := sockowner.Owner(c); ok {
		return "uid " + strconv.FormatUint(uint64(uid), 10)
	}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.RemoteAddr().String()
}

// Addr is the address bound, with the port chosen when addr's was 0.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx ends, then closes the listener and every
// connection (waiting at most a second for requests under way).
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.hs.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("metrics: serving: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.hs.Shutdown(sctx); err != nil {
		_ = s.hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics: serving: %w", err)
	}
	return nil
}
