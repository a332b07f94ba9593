package ctl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func post(path, body string) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		path, len(body), body)
}

func get(path string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
}

func TestBadRequests(t *testing.T) {
	b := newMemBackend("web", "db")
	ts := startServer(t, b, "", nil)
	for _, tc := range []struct {
		name   string
		raw    string
		status int
		code   string
		msg    string
	}{
		{"malformed JSON", post("/v1/restart", `{"names": ["web"`), 400, "bad_request", "unexpected EOF"},
		{"not JSON", post("/v1/restart", `names=web`), 400, "bad_request", "invalid character"},
		{"unknown field", post("/v1/restart", `{"nmes": ["web"]}`), 400, "bad_request", `unknown field "nmes"`},
		{"wrong type", post("/v1/restart", `{"names": "web"}`), 400, "bad_request", "cannot unmarshal"},
		{"data after the value", post("/v1/restart", `{"names": ["web"]} {}`), 400, "bad_request", "data after"},
		{"empty body", post("/v1/restart", ``), 400, "bad_request", "empty body"},
		{"no names", post("/v1/restart", `{"names": []}`), 400, "bad_request", "name at least one program"},
		{"empty name", post("/v1/stop", `{"names": [""]}`), 400, "bad_request", "empty program name"},
		{"control character", post("/v1/stop", `{"names": ["we\u0007b"]}`), 400, "bad_request", "control character"},
		{"bad signal", post("/v1/signal", `{"signal": "NOPE", "names": ["web"]}`), 400, "bad_request", `unknown signal "NOPE"`},
		{"no signal", post("/v1/signal", `{"names": ["web"]}`), 400, "bad_request", "no signal"},
		{"all_at_once on start", post("/v1/start", `{"names": ["web"], "all_at_once": true}`), 400, "bad_request", "start: all_at_once is restart's"},
		{"all_at_once on stop", post("/v1/stop", `{"names": ["web"], "all_at_once": true}`), 400, "bad_request", "stop: all_at_once is restart's"},
		{"timeout on stop", post("/v1/stop", `{"names": ["web"], "timeout_ms": 5}`), 400, "bad_request", "stop: wait and timeout_ms are start's and restart's"},
		{"wait on stop", post("/v1/stop", `{"names": ["web"], "wait": true}`), 400, "bad_request", "stop: wait and timeout_ms are start's and restart's"},
		{"with_dependents on start", post("/v1/start", `{"names": ["web"], "with_dependents": true}`), 400, "bad_request", "start: with_dependents is stop's and restart's"},
		{"negative timeout", post("/v1/restart", `{"names": ["web"], "timeout_ms": -1}`), 400, "bad_request", "restart: timeout_ms must be between 0 and a day"},
		{"scale without counts", post("/v1/scale", `{}`), 400, "bad_request", "scale: name at least one program"},
		{"scale an instance", post("/v1/scale", `{"counts": {"web:1": 2}}`), 400, "bad_request", "name a program, not an instance"},
		{"query on a POST", post("/v1/reload?x=1", `{}`), 400, "bad_request", "in the body"},
		{"reload with a field", post("/v1/reload", `{"force": true}`), 400, "bad_request", "unknown field"},
		{"unknown verb", post("/v1/frobnicate", `{}`), 404, "unknown_verb", `unknown verb "frobnicate"`},
		{"no version", get("/status"), 404, "unknown_verb", "/v1/"},
		{"future version", get("/v2/status"), 404, "unknown_verb", "/v1/"},
		{"wrong method", get("/v1/restart"), 405, "method_not_allowed", "restart wants POST"},
		{"unknown parameter", get("/v1/status?nam=web"), 400, "bad_request", `unknown parameter "nam"`},
		{"bad n", get("/v1/logs?n=ten"), 400, "bad_request", `n="ten"`},
		{"n twice", get("/v1/logs?n=1&n=2"), 400, "bad_request", "given 2 times"},
		{"bad follow", get("/v1/events?follow=maybe"), 400, "bad_request", "not a boolean"},
		{"bad escape", get("/v1/status?name=%zz"), 400, "bad_request", "bad query"},
		{"unknown program", get("/v1/status?name=ghost"), 404, "unknown_program", `unknown program "ghost"`},
		{"declared too large", "POST /v1/restart HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n{", 413, "too_large", "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body, err := rawExchange(t, ts.path, tc.raw)
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			var er errorReply
			if err := json.Unmarshal(body, &er); err != nil {
				t.Fatalf("reply %q is not a JSON error: %v", body, err)
			}
			if resp.StatusCode != tc.status || er.Code != tc.code || !strings.Contains(er.Error, tc.msg) {
				t.Fatalf("got %d %+v, want %d %s containing %q", resp.StatusCode, er, tc.status, tc.code, tc.msg)
			}
		})
	}
	if b.restarts("web") != 0 {
		t.Fatal("a bad request reached the backend")
	}
	c := newClient(t, ts.path)
	if st, err := c.Status(t.Context(), nil); err != nil || len(st) != 2 {
		t.Fatalf("status after the bad requests: %v %v", st, err)
	}
	c.Close()
	waitNoLeaks(t, b)
}

// TestOtherVerbsZeroFields: a body may carry another verb's field at its
// zero value (what a client that fills in every field sends); only a value
// the verb cannot honour is refused.
func TestOtherVerbsZeroFields(t *testing.T) {
	b := newMemBackend("web")
	ts := startServer(t, b, "", nil)
	for _, raw := range []string{
		post("/v1/start", `{"names": ["web"], "all_at_once": false, "with_dependents": false}`),
		post("/v1/stop", `{"names": ["web"], "all_at_once": false, "timeout_ms": 0, "wait": null}`),
		post("/v1/restart", `{"names": ["web"], "all_at_once": false, "wait": true, "timeout_ms": 0, "with_dependents": false}`),
	} {
		resp, body, err := rawExchange(t, ts.path, raw)
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"ok":true}` {
			t.Errorf("%q: got %d %s, want 200 {\"ok\":true}", raw, resp.StatusCode, body)
		}
	}
	waitNoLeaks(t, b)
}

// TestHugeBody: 10 MiB bodies, with and without a declared length, are
// refused (413) or dropped, and the server carries on.
func TestHugeBody(t *testing.T) {
	b := newMemBackend("web")
	ts := startServer(t, b, "", nil)
	huge := `{"names": ["` + strings.Repeat("w", 10<<20) + `"]}`
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			conn, err := net.Dial("unix", ts.path)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			// Write while reading: the server may reply and close early.
			go func() {
				w := bufio.NewWriter(conn)
				if chunked {
					fmt.Fprintf(w, "POST /v1/restart HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
					for s := huge; len(s) > 0; {
						n := min(len(s), 64<<10)
						fmt.Fprintf(w, "%x\r\n%s\r\n", n, s[:n])
						s = s[n:]
					}
					fmt.Fprintf(w, "0\r\n\r\n")
				} else {
					fmt.Fprintf(w, "POST /v1/restart HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(huge), huge)
				}
				w.Flush() // fails once the server has closed: that is allowed
			}()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Logf("connection dropped: %v", err) // allowed: "error or dropped"
			} else {
				body, _ := io.ReadAll(resp.Body)
				var er errorReply
				if resp.StatusCode != 413 || json.Unmarshal(body, &er) != nil || er.Code != "too_large" {
					t.Fatalf("reply %d %q, want 413 too_large", resp.StatusCode, body)
				}
			}
		})
	}
	c := newClient(t, ts.path)
	if st, err := c.Status(t.Context(), nil); err != nil || len(st) != 1 {
		t.Fatalf("status after huge bodies: %v %v", st, err)
	}
	c.Close()
	if b.restarts("web") != 0 {
		t.Fatal("a huge request reached the backend")
	}
	waitNoLeaks(t, b)
}

// TestHalfWrittenRequest: a client that stops halfway through a request
// (header or body), or hangs up there, is dropped on a timeout; meanwhile,
// and afterwards, others are served.
func TestHalfWrittenRequest(t *testing.T) {
	b := newMemBackend("web")
	ts := startServer(t, b, "", func(c *ServerConfig) {
		c.ReadHeaderTimeout, c.ReadTimeout = time.Second, 2*time.Second
	})
	c := newClient(t, ts.path)
	for _, tc := range []struct {
		name   string
		raw    string
		hangUp bool
	}{
		{"half a header", "GET /v1/sta", false},
		{"header without its end", "POST /v1/restart HTTP/1.1\r\nHost: x\r\nContent-Le", false},
		{"half a body", "POST /v1/restart HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"names\": [\"w", false},
		{"half a chunked body", "POST /v1/restart HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"names\"", false},
		{"hang up in the header", "GET /v1/status HTTP/1.1\r\nHo", true},
		{"hang up in the body", "POST /v1/restart HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"na", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("unix", ts.path)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tc.raw); err != nil {
				t.Fatal(err)
			}
			// While this request hangs, another client is served.
			if st, err := c.Status(t.Context(), nil); err != nil || len(st) != 1 {
				t.Fatalf("status while a request is half-written: %v %v", st, err)
			}
			if tc.hangUp {
				conn.Close()
				return
			}
			// The server gives up on its own: an error reply or a close.
			conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err == nil {
				if resp.StatusCode < 400 || resp.StatusCode > 499 {
					t.Fatalf("half-written request got %s, want a 4xx or a close", resp.Status)
				}
				_, err = io.Copy(io.Discard, resp.Body)
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the server kept the half-written connection open for 30s")
			}
		})
	}
	if b.restarts("web") != 0 {
		t.Fatal("a half-written request reached the backend")
	}
	c.Close()
	waitNoLeaks(t, b)
}

// TestClientGoneMidStream: following clients that hang up, or stop reading,
// are dropped: their handler ends, the backend's stream is cancelled, and
// the server carries on.
func TestClientGoneMidStream(t *testing.T) {
	b := newMemBackend("web", "db")
	b.followBuf = 1 << 17 // never cut off by the backend: the server must drop it
	ts := startServer(t, b, "", func(c *ServerConfig) { c.WriteTimeout = time.Second })
	c := newClient(t, ts.path)
	for i := range 10 {
		b.appendLog("web", "stdout", fmt.Sprint("history ", i))
	}

	t.Run("hang up", func(t *testing.T) {
		for _, path := range []string{"/v1/logs?name=web&n=5&follow=1", "/v1/events?follow=1", "/v1/logs?follow=true"} {
			conn, err := net.Dial("unix", ts.path)
			if err != nil {
				t.Fatal(err)
			}
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
				t.Fatalf("%s: %v %v", path, resp, err)
			}
			if strings.HasPrefix(path, "/v1/logs?name=web") {
				var l logLine
				if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || l.Text != "history 5" {
					t.Fatalf("first streamed line %+v, %v; want history 5", l, err)
				}
			}
			conn.Close()
		}
		b.appendLog("web", "stdout", "after the hang-ups") // nobody is left to take it
		waitNoLeaks(t, b)
	})

	t.Run("stops reading", func(t *testing.T) {
		conn, err := net.Dial("unix", ts.path)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "GET /v1/logs?name=web&n=0&follow=1 HTTP/1.1\r\nHost: x\r\n\r\n")
		waitFollowers(t, b, 1)
		// Several MiB, far beyond what the socket buffers hold, and never read.
		line := strings.Repeat("x", 1024)
		for range 8192 {
			b.appendLog("web", "stdout", line)
		}
		// Others are served while the writer is stuck…
		if err := c.Restart(t.Context(), []string{"db"}, RestartOptions{}); err != nil {
			t.Fatalf("restart while a stream is stuck: %v", err)
		}
		c.Close()
		// …and the stuck stream is dropped after the write timeout.
		waitNoLeaks(t, b)
	})
}

// TestSlowCommand: a command waiting in the backend blocks nobody else, and
// a client that gives up cancels it.
func TestSlowCommand(t *testing.T) {
	b := newMemBackend("web")
	b.restartGap = make(chan struct{})
	ts := startServer(t, b, "", nil)
	c := newClient(t, ts.path)

	errc := make(chan error, 1)
	go func() { errc <- c.Restart(t.Context(), []string{"web"}, RestartOptions{}) }()
	if st, err := c.Status(t.Context(), nil); err != nil || len(st) != 1 {
		t.Fatalf("status while a restart waits: %v %v", st, err)
	}
	select {
	case b.restartGap <- struct{}{}:
	case <-time.After(30 * time.Second):
		t.Fatal("the restart never reached the backend")
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	go func() { errc <- c.Restart(ctx, []string{"web"}, RestartOptions{}) }()
	waitFor(t, "the restart to reach the backend", func() bool { return len(serverGoroutines()) > 0 && handlerIn("memBackend).Restart") })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled restart: %v", err)
	}
	c.Close()
	waitNoLeaks(t, b) // the handler saw the client leave and returned
	if got := b.restarts("web"); got != 1 {
		t.Fatalf("restarts = %d, want 1 (the cancelled one never happened)", got)
	}
}

func handlerIn(fn string) bool {
	for _, g := range serverGoroutines() {
		if strings.Contains(g, fn) {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		<-tick.C
	}
}

// TestConcurrentClients: 100 clients at once, each asking for the status
// and restarting a program: every reply is well-formed and every restart
// is counted.
func TestConcurrentClients(t *testing.T) {
	const clients, programs = 100, 20
	var progNames []string
	for i := range programs {
		progNames = append(progNames, fmt.Sprintf("p%02d", i))
	}
	b := newMemBackend(progNames...)
	ts := startServer(t, b, "", nil)

	start := make(chan struct{})
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			c := Dial(ts.path)
			defer c.Close()
			<-start
			st, err := c.Status(t.Context(), nil)
			if err != nil {
				errs <- fmt.Errorf("client %d status: %w", i, err)
				return
			}
			if len(st) != programs || st[0].Name != "p00" || st[programs-1].State == "" {
				errs <- fmt.Errorf("client %d: malformed status of %d programs", i, len(st))
				return
			}
			name := progNames[i%programs]
			if err := c.Restart(t.Context(), []string{name}, RestartOptions{}); err != nil {
				errs <- fmt.Errorf("client %d restart %s: %w", i, name, err)
				return
			}
			st, err = c.Status(t.Context(), []string{name})
			if err != nil || len(st) != 1 || st[0].Restarts < 1 {
				errs <- fmt.Errorf("client %d: status of %s after its restart: %+v %v", i, name, st, err)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := 0
	for _, n := range progNames {
		if got := b.restarts(n); got != clients/programs {
			t.Errorf("%s restarted %d times, want %d", n, got, clients/programs)
		}
		total += b.restarts(n)
	}
	if total != clients {
		t.Errorf("%d restarts in all, want %d", total, clients)
	}
	waitNoLeaks(t, b)
}

// panicky is a backend whose Reload panics and whose Events has nothing.
type panicky struct{ *memBackend }

func (panicky) Reload(context.Context) error { panic("reload exploded") }

func (panicky) Events(context.Context, bool) (<-chan Event, error) { return nil, nil }

// TestBackendPanic: a panic in the backend drops that one connection, is
// logged with its stack, and the server carries on.
func TestBackendPanic(t *testing.T) {
	b := newMemBackend("web")
	var logBuf syncBuffer
	ts := startServer(t, b, "", func(c *ServerConfig) {
		c.Backend = panicky{b}
		c.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	})
	c := newClient(t, ts.path)
	var ue *UnreachableError
	if err := c.Reload(t.Context()); !errors.As(err, &ue) {
		t.Fatalf("reload with a panicking backend: %v, want the connection dropped", err)
	}
	if log := logBuf.String(); !strings.Contains(log, "reload exploded") || !strings.Contains(log, "panicky.Reload") {
		t.Fatalf("the panic was not logged with its stack:\n%s", log)
	}
	n := 0
	if err := c.Events(t.Context(), false, func(Event) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("events from a nil channel: %d events, %v; want an empty stream", n, err)
	}
	if st, err := c.Status(t.Context(), nil); err != nil || len(st) != 1 {
		t.Fatalf("status after the panic: %v %v", st, err)
	}
	c.Close()
	waitNoLeaks(t, b)
}
