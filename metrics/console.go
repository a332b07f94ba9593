package metrics

import (
	"crypto/subtle"
	"embed"
	"encoding/json"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The web console: a page at / with every program, its last run and its
// log tail, served from the binary. The table is rendered here, with
// html/template's escaping, so it works without JavaScript; the script
// refreshes it by polling /api/state (a short request each time: a page
// never holds one of the listener's connection slots between polls) and
// writes every program-supplied string with textContent. A strict CSP
// allows only this listener's own script and style, so even a string
// that got through as markup could not run.

//go:embed console/*
var consoleFiles embed.FS

// pageTmpl is parsed at the page's first request, not at start-up: every
// run of the binary (supervisectl, supervise exec, the sandbox's init)
// would otherwise parse it, and it was the largest of the binary's
// package initialisations.
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("index.html").Funcs(template.FuncMap{
		"age":   ageString,
		"bytes": bytesString,
		"cpu":   func(s float64) string { return strconv.FormatFloat(s, 'f', 2, 64) + "s" },
		"exit":  exitString,
	}).ParseFS(consoleFiles, "console/index.html"))
})

// csp lets the page load only its own script and style, and talk only to
// this listener.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// maxTail bounds the log lines one /api/logs request returns.
const maxTail = 500

// maxControl bounds the control requests served at once on this listener,
// so that following streams (logs -f) can never take every connection
// slot from /healthz and the scrapers.
const maxControl = 8

// Control serves the control verbs under /v1/ on this listener, to the
// holder of token only. Without it (the default) the listener is read-only.
func (h *Handler) Control(verbs http.Handler, token string) {
	h.control, h.token = verbs, []byte(token)
}

type pageData struct {
	Now      time.Time
	Programs []pageProgram
	Control  bool
	Version  string
}

type pageProgram struct {
	Program
	Run     *Run
	Uptime  time.Duration
	Running bool
}

func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	snap := h.src.Snapshot()
	runs := h.src.Runs()
	now := time.Now()
	d := pageData{Now: now, Control: h.control != nil, Version: h.build.Version}
	for _, p := range snap.Programs {
		pp := pageProgram{Program: p, Running: p.Pid != 0}
		if r, ok := runs[p.Name]; ok {
			pp.Run = &r
		}
		if !p.StartedAt.IsZero() {
			pp.Uptime = now.Sub(p.StartedAt)
		}
		d.Programs = append(d.Programs, pp)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", csp)
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Frame-Options", "DENY")
	if err := pageTmpl().Execute(w, d); err != nil {
		http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
	}
}

func (h *Handler) asset(w http.ResponseWriter, r *http.Request) {
	name, ctype := "console/console.js", "text/javascript; charset=utf-8"
	if strings.HasSuffix(r.URL.Path, ".css") {
		name, ctype = "console/console.css", "text/css; charset=utf-8"
	}
	b, err := consoleFiles.ReadFile(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ctype)
	_, _ = w.Write(b)
}

// stateJSON is what the page polls: every instance and its last run.
type stateJSON struct {
	Now      time.Time     `json:"now"`
	Control  bool          `json:"control"`
	Programs []programJSON `json:"programs"`
}

type programJSON struct {
	Name        string  `json:"name"`
	State       string  `json:"state"`
	Ready       bool    `json:"ready"`
	Pid         int     `json:"pid"`
	UptimeMs    int64   `json:"uptime_ms"`
	Restarts    int     `json:"restarts"`
	MemoryBytes int64   `json:"memory_bytes"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	LastExit    string  `json:"last_exit"`
	Run         *Run    `json:"run"`
}

func (h *Handler) state(w http.ResponseWriter, _ *http.Request) {
	snap := h.src.Snapshot()
	runs := h.src.Runs()
	now := time.Now()
	out := stateJSON{Now: now, Control: h.control != nil, Programs: make([]programJSON, 0, len(snap.Programs))}
	for _, p := range snap.Programs {
		pj := programJSON{Name: p.Name, State: p.State, Ready: p.Ready, Pid: p.Pid, Restarts: p.Restarts,
			MemoryBytes: p.MemoryBytes, CPUSeconds: p.CPUSeconds, LastExit: exitString(p.LastExit)}
		if !p.StartedAt.IsZero() {
			pj.UptimeMs = now.Sub(p.StartedAt).Milliseconds()
		}
		if r, ok := runs[p.Name]; ok {
			pj.Run = &r
		}
		out.Programs = append(out.Programs, pj)
	}
	writeJSON(w, out)
}

func (h *Handler) logTail(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n := 100
	if v := q.Get("n"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			http.Error(w, "n must be a count of lines", http.StatusBadRequest)
			return
		}
	}
	lines, err := h.src.LogTail(q.Get("name"), min(n, maxTail))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if lines == nil {
		lines = []LogLine{}
	}
	writeJSON(w, lines)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// serveControl hands a /v1/ request to the control verbs when it carries
// the token. The token is compared in constant time and never logged.
func (h *Handler) serveControl(w http.ResponseWriter, r *http.Request) {
	if h.control == nil {
		http.Error(w, "not found: this listener is read-only ([supervisor] http_token_file enables the control verbs here)", http.StatusNotFound)
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), h.token) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="supervise"`)
		http.Error(w, "unauthorized: the control verbs need Authorization: Bearer TOKEN", http.StatusUnauthorized)
		return
	}
	if h.controlBusy.Add(1) > maxControl {
		h.controlBusy.Add(-1)
		w.Header().Set("Connection", "close")
		http.Error(w, "too many control requests on this listener at once; try again", http.StatusServiceUnavailable)
		return
	}
	defer h.controlBusy.Add(-1)
	h.control.ServeHTTP(w, r)
}

// controlState is the part of Handler the control verbs use.
type controlState struct {
	control     http.Handler
	token       []byte
	controlBusy atomic.Int64
}

func ageString(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return strconv.FormatInt(s/60, 10) + "m" + strconv.FormatInt(s%60, 10) + "s"
	case s < 86400:
		return strconv.FormatInt(s/3600, 10) + "h" + strconv.FormatInt(s%3600/60, 10) + "m"
	}
	return strconv.FormatInt(s/86400, 10) + "d" + strconv.FormatInt(s%86400/3600, 10) + "h"
}

func bytesString(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(max(n, 0), 10) + "B"
	}
	v, suffix := float64(n)/unit, "Ki"
	for _, s := range []string{"Mi", "Gi", "Ti"} {
		if v < unit {
			break
		}
		v, suffix = v/unit, s
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + suffix
}

func exitString(e *Exit) string {
	switch {
	case e == nil:
		return "-"
	case e.Reason != "" && e.Reason != "Completed" && e.Reason != "Error":
		return e.Reason // Signaled, OOMKilled, LivenessProbeFailed … say more than the code
	}
	return "exit " + strconv.Itoa(e.Code)
}
