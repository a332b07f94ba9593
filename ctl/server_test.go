package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/logs"
)

func TestRoundTrip(t *testing.T) {
	b := newMemBackend("db", "web", "worker")
	ts := startServer(t, b, "", nil)
	c := newClient(t, ts.path)
	ctx := t.Context()

	st, err := c.Status(ctx, nil)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	if got := names(st); !slices.Equal(got, []string{"db", "web", "worker"}) {
		t.Fatalf("status names = %v, want db web worker", got)
	}
	st, err = c.Status(ctx, []string{"web"})
	if err != nil || len(st) != 1 || st[0].Name != "web" || st[0].State != "Running" || st[0].Pid == 0 {
		t.Fatalf("status web = %+v, %v; want web Running with a pid", st, err)
	}
	webPid := st[0].Pid

	// Unknown program: a 404 reply that matches the sentinel.
	_, err = c.Status(ctx, []string{"nope"})
	var se *ServerError
	if !errors.Is(err, ErrUnknownProgram) || !errors.As(err, &se) || se.Status != 404 || !strings.Contains(se.Message, `"nope"`) {
		t.Fatalf("status nope: err = %#v, want a 404 ServerError matching ErrUnknownProgram naming \"nope\"", err)
	}
	if err := c.Restart(ctx, []string{"nope"}, RestartOptions{}); !errors.Is(err, ErrUnknownProgram) {
		t.Fatalf("restart nope: err = %v, want ErrUnknownProgram", err)
	}

	if err := c.Restart(ctx, []string{"web"}, RestartOptions{}); err != nil {
		t.Fatalf("restart: %v", err)
	}
	st, _ = c.Status(ctx, []string{"web"})
	if st[0].Pid == webPid || st[0].Restarts != 1 {
		t.Fatalf("after restart: pid %d (was %d), restarts %d; want a new pid and 1 restart", st[0].Pid, webPid, st[0].Restarts)
	}

	if err := c.Stop(ctx, []string{"worker"}, StopOptions{}); err != nil {
		t.Fatalf("stop: %v", err)
	}
	st, _ = c.Status(ctx, []string{"worker"})
	if st[0].State != "Stopped" || st[0].Pid != 0 || st[0].LastExit == nil || st[0].LastExit.Signal != "TERM" {
		t.Fatalf("after stop: %+v; want Stopped, pid 0, last exit by TERM", st[0])
	}
	if err := c.Start(ctx, []string{"worker"}, WaitOptions{}); err != nil {
		t.Fatalf("start: %v", err)
	}
	st, _ = c.Status(ctx, []string{"worker"})
	if st[0].State != "Running" || st[0].Pid == 0 {
		t.Fatalf("after start: %+v; want Running", st[0])
	}

	if err := c.Signal(ctx, syscall.SIGHUP, []string{"all"}); err != nil {
		t.Fatalf("signal: %v", err)
	}
	b.mu.Lock()
	sigs := slices.Clone(b.signals)
	b.mu.Unlock()
	if want := []string{"db:HUP", "web:HUP", "worker:HUP"}; !slices.Equal(sigs, want) {
		t.Fatalf("signals received = %v, want %v", sigs, want)
	}
	// A backend failure that is not a category: a 500 with its message.
	if err := c.Stop(ctx, []string{"db"}, StopOptions{WithDependents: true}); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	stops := slices.Clone(b.stopped)
	b.mu.Unlock()
	if want := []StopOptions{{}, {WithDependents: true}}; !slices.Equal(stops, want) {
		t.Fatalf("stops received with %+v, want %+v", stops, want)
	}
	err = c.Signal(ctx, syscall.SIGUSR1, []string{"db"})
	if !errors.As(err, &se) || se.Status != 500 || se.Code != "failed" || !strings.Contains(se.Message, "not running") {
		t.Fatalf("signal to a stopped program: %v, want a 500 failed reply saying not running", err)
	}

	if err := c.Reload(ctx); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	b.mu.Lock()
	reloads, shutdowns := b.reloads, b.shutdowns
	b.mu.Unlock()
	if reloads != 1 || shutdowns != 1 {
		t.Fatalf("reloads %d, shutdowns %d; want 1 and 1", reloads, shutdowns)
	}

	// Events: the history of every transition so far.
	var evs []Event
	if err := c.Events(ctx, false, func(ev Event) error { evs = append(evs, ev); return nil }); err != nil {
		t.Fatalf("events: %v", err)
	}
	var trans []string
	for _, ev := range evs {
		trans = append(trans, ev.Program+":"+ev.From+">"+ev.To)
	}
	want := []string{"web:Running>Running", "worker:Running>Stopped", "worker:Stopped>Running", "db:Running>Stopped"}
	if !slices.Equal(trans, want) {
		t.Fatalf("events = %v, want %v", trans, want)
	}
}

func TestLogs(t *testing.T) {
	b := newMemBackend("web", "worker")
	ts := startServer(t, b, "", nil)
	c := newClient(t, ts.path)
	for i := range 20 {
		b.appendLog("web", "stdout", fmt.Sprintf("web line %d", i))
	}
	b.appendLog("worker", "stderr", "worker line")

	var got []logs.Line
	collect := func(l logs.Line) error { got = append(got, l); return nil }
	if err := c.Logs(t.Context(), []string{"web"}, 5, false, collect); err != nil {
		t.Fatalf("logs -n 5: %v", err)
	}
	if len(got) != 5 || got[0].Text != "web line 15" || got[4].Text != "web line 19" || got[4].Program != "web" || got[4].Stream != "stdout" {
		t.Fatalf("logs -n 5 web = %+v; want web lines 15..19", got)
	}
	got = nil
	if err := c.Logs(t.Context(), nil, -1, false, collect); err != nil {
		t.Fatalf("logs: %v", err)
	}
	if len(got) != 21 || got[20].Text != "worker line" || got[20].Stream != "stderr" {
		t.Fatalf("logs of all = %d lines ending %+v; want 21 ending with the worker's stderr line", len(got), got[len(got)-1])
	}
	got = nil
	if err := c.Logs(t.Context(), []string{"web"}, 0, false, collect); err != nil || len(got) != 0 {
		t.Fatalf("logs -n 0 = %d lines, %v; want none", len(got), err)
	}
	if err := c.Logs(t.Context(), []string{"ghost"}, 1, false, collect); !errors.Is(err, ErrUnknownProgram) {
		t.Fatalf("logs ghost: %v, want ErrUnknownProgram", err)
	}

	// Follow: the history, then new lines, across a restart, until ctx ends.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	lines := make(chan logs.Line)
	errc := make(chan error, 1)
	go func() {
		errc <- c.Logs(ctx, []string{"web"}, 2, true, func(l logs.Line) error {
			select {
			case lines <- l:
			case <-ctx.Done():
			}
			return nil
		})
	}()
	expect := func(text string) {
		t.Helper()
		select {
		case l := <-lines:
			if l.Text != text {
				t.Fatalf("followed line %q, want %q", l.Text, text)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no line %q within 30s", text)
		}
	}
	expect("web line 18")
	expect("web line 19")
	b.appendLog("worker", "stdout", "not followed") // another program
	b.appendLog("web", "stdout", "live 1")
	expect("live 1")
	if err := c.Restart(t.Context(), []string{"web"}, RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("now Running")
	b.appendLog("web", "stdout", "live 2")
	expect("live 2")
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("logs -f after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("logs -f did not return 30s after its context ended")
	}
	c.Close()
	waitNoLeaks(t, b)
}

func TestEventsFollow(t *testing.T) {
	b := newMemBackend("web")
	ts := startServer(t, b, "", nil)
	c := newClient(t, ts.path)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	evs := make(chan Event, 16)
	errc := make(chan error, 1)
	go func() { errc <- c.Events(ctx, true, func(ev Event) error { evs <- ev; return nil }) }()
	waitFollowers(t, b, 1)
	for _, to := range []string{"Stopped", "Running"} {
		if err := b.setState(t.Context(), []string{"web"}, to); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"Running>Stopped", "Stopped>Running"} {
		select {
		case ev := <-evs:
			if got := ev.From + ">" + ev.To; got != want || ev.Program != "web" || ev.Time.IsZero() {
				t.Fatalf("event %+v, want web %s with a time", ev, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no event %s within 30s", want)
		}
	}
	// The server stopping ends a follower cleanly.
	ts.stop()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("events -f when the server stops: %v, want a clean end", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("events -f still running 30s after the server stopped")
	}
	c.Close()
	waitNoLeaks(t, b)
}

// waitFollowers waits until the backend has n followers registered.
func waitFollowers(t *testing.T, b *memBackend, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for b.followerCount() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d followers after 30s, want %d", b.followerCount(), n)
		}
		<-tick.C
	}
}

// TestStatusJSONShape checks the wire form the issue specifies for
// `status --json`: field names and null/absent rules.
func TestStatusJSONShape(t *testing.T) {
	b := newMemBackend("web", "db")
	ready := false
	b.progs["db"].status = ProgramStatus{Name: "db", State: "CrashLoopBackOff", Ready: &ready, Restarts: 3, NextStartInMs: 40000,
		LastExit: &ExitInfo{Code: 137, Signal: "KILL", Reason: "OOMKilled", FinishedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	ts := startServer(t, b, "", nil)
	resp, body, err := rawExchange(t, ts.path, "GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status: %v %v", resp, err)
	}
	var arr []map[string]any
	if err := json.Unmarshal(body, &arr); err != nil || len(arr) != 2 {
		t.Fatalf("status body %s: not a JSON array of 2 (%v)", body, err)
	}
	web, db := arr[0], arr[1] // in the backend's order
	for _, k := range []string{"name", "state", "pid", "restarts", "started_at", "last_exit", "memory_bytes", "cpu_seconds"} {
		if _, ok := web[k]; !ok {
			t.Errorf("status object lacks %q: %s", k, body)
		}
	}
	if web["started_at"] == nil || web["last_exit"] != nil || web["next_start_in_ms"] != nil {
		t.Errorf("running web: started_at %v, last_exit %v, next_start_in_ms %v; want a time, null, absent",
			web["started_at"], web["last_exit"], web["next_start_in_ms"])
	}
	le, _ := db["last_exit"].(map[string]any)
	if db["pid"] != 0.0 || db["started_at"] != nil || db["next_start_in_ms"] != 40000.0 || db["ready"] != false ||
		le["code"] != 137.0 || le["signal"] != "KILL" || le["reason"] != "OOMKilled" || le["finished_at"] != "2026-01-02T03:04:05Z" {
		t.Errorf("db in backoff = %v", db)
	}
}

func TestSocketMode(t *testing.T) {
	ts := startServer(t, newMemBackend("web"), "", nil)
	fi, err := os.Stat(ts.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	// No leftovers from the private directory the socket was made in.
	entries, _ := os.ReadDir(filepath.Dir(ts.path))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".s") {
			t.Errorf("temporary directory %s left behind", e.Name())
		}
	}

	// With a group: 0660 and owned by it.
	gid := 4242
	ts = startServer(t, newMemBackend("web"), "", func(c *ServerConfig) { c.Group = fmt.Sprint(gid) })
	fi, err = os.Stat(ts.path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o660 || int(st.Gid) != gid {
		t.Fatalf("socket with a group: mode %v gid %d, want 0660 and gid %d", fi.Mode(), st.Gid, gid)
	}
	// Close removes it.
	ts.stop()
	if _, err := os.Lstat(ts.path); !os.IsNotExist(err) {
		t.Fatalf("socket still there after Close: %v", err)
	}
}

func TestStaleSocketReplaced(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/s.sock"
	// A dead supervisor leaves its socket file behind: bound, nobody listening.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := net.Dial("unix", path); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("stale socket dial: %v, want connection refused", err)
	}
	ts := startServer(t, newMemBackend("web"), dir, nil)
	if st, err := newClient(t, ts.path).Status(t.Context(), nil); err != nil || len(st) != 1 {
		t.Fatalf("status on the replaced socket: %v %v", st, err)
	}
}

func TestLiveSocketNotStolen(t *testing.T) {
	ts := startServer(t, newMemBackend("web"), "", nil)
	before, _ := os.Lstat(ts.path)

	second := NewServer(ServerConfig{Path: ts.path, Backend: newMemBackend("other")})
	err := second.Listen()
	if !errors.Is(err, ErrAlreadyRunning) || err.Error() != "supervise is already running on "+ts.path {
		t.Fatalf("second Listen: %v, want %q", err, "supervise is already running on "+ts.path)
	}
	if err := second.Close(); err != nil {
		t.Fatalf("Close of a server that never listened: %v", err)
	}
	after, err := os.Lstat(ts.path)
	if err != nil || !os.SameFile(before, after) {
		t.Fatalf("the live socket was replaced or removed: %v", err)
	}
	if st, err := newClient(t, ts.path).Status(t.Context(), nil); err != nil || st[0].Name != "web" {
		t.Fatalf("the first server no longer answers: %v %v", st, err)
	}
}

func TestListenRefusesNonSocket(t *testing.T) {
	path := t.TempDir() + "/s.sock"
	if err := os.WriteFile(path, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := NewServer(ServerConfig{Path: path, Backend: newMemBackend()}).Listen()
	if err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file: %v, want a not-a-socket error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Fatalf("the file was touched: %q", b)
	}
}

// TestCloseKeepsSuccessorSocket: a supervisor that closes late must not
// remove the socket of the one that replaced it.
func TestCloseKeepsSuccessorSocket(t *testing.T) {
	dir := t.TempDir()
	first := NewServer(ServerConfig{Path: dir + "/s.sock", Backend: newMemBackend()})
	if err := first.Listen(); err != nil {
		t.Fatal(err)
	}
	os.Remove(dir + "/s.sock")                           // somebody cleaned up…
	ts := startServer(t, newMemBackend("web"), dir, nil) // …and a successor started
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := newClient(t, ts.path).Status(t.Context(), nil); err != nil {
		t.Fatalf("successor unreachable after the first server closed: %v", err)
	}
}

func TestClientUnreachable(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, path string
		prepare    func(path string)
	}{
		{name: "no file", path: dir + "/none.sock"},
		{name: "stale", path: dir + "/stale.sock", prepare: func(p string) {
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			ln.SetUnlinkOnClose(false)
			ln.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.prepare != nil {
				tc.prepare(tc.path)
			}
			_, err := Dial(tc.path).Status(t.Context(), nil)
			var ue *UnreachableError
			if !errors.As(err, &ue) || ue.Socket != tc.path || !strings.Contains(err.Error(), "no supervisor reachable at "+tc.path) {
				t.Fatalf("err = %v, want an UnreachableError naming %s", err, tc.path)
			}
		})
	}
}

func TestServeLifecycleErrors(t *testing.T) {
	s := NewServer(ServerConfig{Path: t.TempDir() + "/s.sock", Backend: newMemBackend()})
	if err := s.Serve(t.Context()); err == nil {
		t.Fatal("Serve before Listen succeeded")
	}
	if err := NewServer(ServerConfig{Path: "/tmp/" + strings.Repeat("x", 120), Backend: newMemBackend()}).Listen(); err == nil ||
		!strings.Contains(err.Error(), "at most 107") {
		t.Fatalf("Listen on a too long path: %v", err)
	}
	if err := NewServer(ServerConfig{Path: t.TempDir() + "/s.sock"}).Listen(); err == nil {
		t.Fatal("Listen without a backend succeeded")
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.Serve(t.Context()); err == nil {
		t.Fatal("Serve after Close succeeded")
	}
}

func TestDefaultSocketPath(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		uid  int
		want string
	}{
		{"explicit", map[string]string{"SUPERVISE_SOCKET": "/x/s.sock", "XDG_RUNTIME_DIR": "/run/user/1000"}, 1000, "/x/s.sock"},
		{"xdg", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, 1000, "/run/user/1000/supervise.sock"},
		{"root", nil, 0, "/run/supervise.sock"},
		{"user", nil, 1000, "/tmp/supervise-1000/supervise.sock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := socketPath(func(k string) string { return tc.env[k] }, tc.uid); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func names(st []ProgramStatus) []string {
	var out []string
	for _, s := range st {
		out = append(out, s.Name)
	}
	return out
}

// nanBackend reports a CPU figure JSON cannot carry.
type nanBackend struct{ *memBackend }

func (b nanBackend) Status(ctx context.Context, names []string) ([]ProgramStatus, error) {
	st, err := b.memBackend.Status(ctx, names)
	for i := range st {
		st[i].CPUSeconds = math.NaN()
	}
	return st, err
}

func TestStatusWithNaNCPU(t *testing.T) {
	dir := t.TempDir()
	srv := NewServer(ServerConfig{Path: dir + "/s.sock", Backend: nanBackend{newMemBackend("web")}})
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done; srv.Close() }()
	st, err := newClient(t, dir+"/s.sock").Status(t.Context(), nil)
	if err != nil || len(st) != 1 || st[0].CPUSeconds != 0 {
		t.Fatalf("status with a NaN CPU figure: %+v %v", st, err)
	}
}

func TestProjectSocketPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if got := projectDir(env(map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}), 1000); got != "/run/user/1000/supervise" {
		t.Errorf("with XDG_RUNTIME_DIR: %s", got)
	}
	if got := projectDir(env(nil), 0); got != "/run/supervise/ctl" { // beside the notify sockets' notify/
		t.Errorf("root: %s", got)
	}
	if got := projectDir(env(nil), 1000); got != fallbackDir(1000) {
		t.Errorf("user without a runtime dir: %s", got)
	}
	a, b := projectSocketName("/home/ann/src/shop"), projectSocketName("/home/bob/src/shop")
	if a == b || !strings.HasPrefix(a, "shop-") || !strings.HasSuffix(a, ".sock") || len(a) != len("shop-")+16+len(".sock") {
		t.Errorf("names %q and %q: want shop-<16 hex>.sock, different", a, b)
	}
	if n := projectSocketName("/x/" + strings.Repeat("é", 40)); len(n) > 24+1+16+5 || strings.ContainsAny(n, "é/ ") {
		t.Errorf("a long non-ASCII name: %q", n)
	}

	// FindProjectSocket walks up to the nearest folder whose runner's
	// socket exists, whatever its Procfile is called.
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	deep := filepath.Join(proj, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := FindProjectSocket(deep); got != "" {
		t.Errorf("no project: %q", got)
	}
	os.WriteFile(filepath.Join(proj, "Procfile.dev"), []byte("web: x\n"), 0o644)
	if got := FindProjectSocket(deep); got != "" {
		t.Errorf("a project without a runner: %q", got)
	}
	sock := ProjectSocketPath(proj)
	os.MkdirAll(filepath.Dir(sock), 0o700)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got := FindProjectSocket(deep); got != sock {
		t.Errorf("from %s: %q, want %q", deep, got, sock)
	}
}
