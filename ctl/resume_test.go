package ctl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/logs"
)

// The cursor passes over, in a replayed history, exactly what was shown
// before: by time, and by count among items of the same time.
func TestCursorPassesOverWhatWasSeen(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	c := newCursor()
	for _, s := range []int{1, 2, 2} { // two lines of one read share a time
		if !c.pass("web", at(s)) {
			t.Fatalf("a first pass refused %d", s)
		}
	}
	c.resume(at(0))
	var got []string
	for _, it := range []struct {
		src string
		s   int
	}{{"web", 1}, {"web", 2}, {"web", 2}, {"web", 2}, {"web", 3}, {"db", -1}, {"db", 4}} {
		if c.pass(it.src, at(it.s)) {
			got = append(got, it.src+"@"+time.Duration(it.s*int(time.Second)).String())
		}
	}
	// The third line at 2s is new (two were seen); db's line before the
	// floor is history that was not asked for.
	want := "web@2s web@3s db@4s"
	if strings.Join(got, " ") != want {
		t.Errorf("passed %v, want %s", got, want)
	}
}

// An upgrade in place ends a waiting command and a followed stream saying
// so; the client waits for the server to answer again and goes on: the
// command sent again, the stream with every line once.
func TestCommandsGoOnThroughAnUpgrade(t *testing.T) {
	b := newMemBackend("web")
	b.restartGap = make(chan struct{})
	ts := startServer(t, b, "", nil)
	c := newClient(t, ts.path)
	for _, l := range []string{"1", "2", "3"} {
		b.appendLog("web", logs.Stdout, l)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	lines := make(chan string, 16)
	followed := make(chan error, 1)
	go func() {
		followed <- c.Logs(ctx, []string{"web"}, -1, true, func(l logs.Line) error { lines <- l.Text; return nil })
	}()
	restarted := make(chan error, 1)
	go func() { restarted <- c.Restart(ctx, []string{"web"}, RestartOptions{}) }()
	waitFollowers(t, b, 1)
	for range 3 {
		<-lines
	}
	// The restart waits in the backend (restartGap): it is under way.
	deadline := time.Now().Add(30 * time.Second)
	for {
		commands, _ := ts.leftForUpgrade()
		n := len(commands)
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d commands under way, want 2", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	ts.EndCommandsForUpgrade(context.Background(), 30*time.Second)
	waitFollowers(t, b, 0)
	// While the upgrade is under way, nothing is answered but "upgrading".
	if err := c.callOnce(ctx, "status", &statusArgs{}, &[]ProgramStatus{}); !isUpgrading(err) {
		t.Fatalf("status during the upgrade: %v, want the upgrading reply", err)
	}
	ts.ResumeCommands() // the exec failed, or the new binary serves: the same to a client
	waitFollowers(t, b, 1)
	b.appendLog("web", logs.Stdout, "4")
	select {
	case l := <-lines:
		if l != "4" {
			t.Fatalf("after the upgrade the follower got %q, want 4 (a line shown twice)", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no line followed after the upgrade")
	}
	b.restartGap <- struct{}{}
	select {
	case err := <-restarted:
		if err != nil {
			t.Fatalf("restart through the upgrade: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("restart did not go on after the upgrade")
	}
	if n := b.restarts("web"); n != 1 {
		t.Errorf("web restarted %d times, want 1", n)
	}
	cancel()
	if err := <-followed; !errors.Is(err, context.Canceled) {
		t.Errorf("logs -f ended with %v, want its context's end", err)
	}
}

// Without the upgrade's word, a stream that breaks is an error and one
// that ends is the end, as before: neither is followed on.
func TestStreamEndWithoutTheUpgradeNotice(t *testing.T) {
	path := t.TempDir() + "/s.sock"
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, `{"program":"web","stream":"stdout","time":"2026-11-26T03:00:00Z","text":"1"}`+"\n")
		w.(http.Flusher).Flush()
		if r.URL.Query().Get("name") == "breaks" {
			panic(http.ErrAbortHandler) // the connection drops mid-stream
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := newClient(t, path)
	for name, wantErr := range map[string]bool{"breaks": true, "ends": false} {
		calls.Store(0)
		err := c.Logs(t.Context(), []string{name}, -1, true, func(logs.Line) error { return nil })
		if (err != nil) != wantErr || calls.Load() != 1 {
			t.Errorf("a stream that %s: %v after %d requests, want an error %v after one", name, err, calls.Load(), wantErr)
		}
	}
}

// The exec follows EndCommandsForUpgrade at once: by its return, a
// follower's stream must have ended whole, its trailer sent, however the
// server's goroutines are scheduled. The connections are cut right after,
// as the exec cuts them.
func TestEndCommandsWaitsForTheTrailer(t *testing.T) {
	for i := range 30 {
		b := newMemBackend("web")
		ts := startServer(t, b, "", nil)
		c := Dial(ts.path)
		got := make(chan error, 1)
		go func() {
			got <- stream(c, t.Context(), "events", &eventsArgs{Follow: true}, func(Event) error { return nil })
		}()
		waitFollowers(t, b, 1)
		ts.EndCommandsForUpgrade(context.Background(), 30*time.Second)
		ts.Close() // the exec: every connection cut
		select {
		case err := <-got:
			if !errors.Is(err, errStreamUpgrading) {
				t.Fatalf("round %d: the stream ended with %v, want the upgrade's word", i, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the stream did not end", i)
		}
		c.Close()
		ts.stop()
	}
}

// status --json reads the raw array, not through call: it too waits out
// an upgrade in place and asks again, instead of failing with the
// upgrading reply.
func TestStatusJSONGoesOnThroughAnUpgrade(t *testing.T) {
	var requests atomic.Int64
	ts := startServer(t, newMemBackend("web"), "", func(cfg *ServerConfig) {
		cfg.OnRequest = func() { requests.Add(1) }
	})
	c := newClient(t, ts.path)
	// A connection kept alive from before the upgrade: once it begins no
	// new one is accepted (they wait in the backlog for the new binary),
	// so the refusal and the version polls come on this one.
	if _, err := c.StatusJSON(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	base := requests.Load()
	ts.EndCommandsForUpgrade(context.Background(), 30*time.Second)
	type result struct {
		raw json.RawMessage
		err error
	}
	got := make(chan result, 1)
	go func() {
		raw, err := c.StatusJSON(t.Context(), nil)
		got <- result{raw, err}
	}()
	// The status refused, then version asked at least once: the client
	// waits for the new binary.
	deadline := time.Now().Add(30 * time.Second)
	for requests.Load() < base+2 {
		select {
		case r := <-got:
			t.Fatalf("status --json during the upgrade returned at once: %v", r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests, want the status and version asked", requests.Load()-base)
		}
		time.Sleep(2 * time.Millisecond)
	}
	ts.ResumeCommands() // the new binary answers
	select {
	case r := <-got:
		if r.err != nil || !strings.Contains(string(r.raw), `"web"`) {
			t.Fatalf("status --json through the upgrade: %s, %v", r.raw, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("status --json did not go on after the upgrade")
	}
}

// The HTTP listener serves the verbs too (VerbHandler), and an upgrade
// waits for its connections as for the socket's, once the listener is
// tracked as supervise tracks it: a client that connected and writes its
// request while the commands end gets the "upgrading" reply before the
// exec, not a connection cut unanswered.
func TestEndCommandsWaitsForTheHTTPListener(t *testing.T) {
	ts := startServer(t, newMemBackend("web"), "", nil)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, tracked := ts.TrackListener(raw)
	accepted := make(chan struct{}, 1)
	hs := &http.Server{Handler: ts.VerbHandler(), ConnState: func(c net.Conn, st http.ConnState) {
		tracked(c, st)
		if st == http.StateNew {
			accepted <- struct{}{}
		}
	}}
	go hs.Serve(ln)
	defer hs.Close()
	conn, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	select {
	case <-accepted:
	case <-time.After(30 * time.Second):
		t.Fatal("the connection was not accepted")
	}
	ended := make(chan struct{})
	go func() {
		ts.EndCommandsForUpgrade(context.Background(), 30*time.Second)
		close(ended)
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		ts.mu.Lock()
		upgrading := ts.upgrading
		ts.mu.Unlock()
		if upgrading {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the commands did not start to end")
		}
	}
	if _, err := io.WriteString(conn, "GET /v1/status HTTP/1.1\r\nHost: supervise\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-ended
	hs.Close() // the exec: every connection cut
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the request written during the upgrade's wait: %v, want the upgrading reply", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), codeUpgrading) {
		t.Fatalf("reply %d %s (%v), want 503 %s", resp.StatusCode, body, err, codeUpgrading)
	}
}
