package probe

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
	"github.com/supervise-dev/supervise/internal/httpcheck"
)

// These tests use real servers on 127.0.0.1; the runner tests among them
// drive the probe timers with a fake clock and synchronise on what the
// server saw and on OnChange, never on time.

const deadline = 30 * time.Second // generous: the machine may be loaded

func TestCheckHTTP(t *testing.T) {
	var gotHost, gotHeader, gotUA, gotAccept, gotEncoding atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		gotHost.Store(r.Host)
		gotHeader.Store(r.Header.Get("X-Probe"))
		gotUA.Store(r.UserAgent())
		gotAccept.Store(r.Header.Get("Accept"))
		gotEncoding.Store(r.Header.Get("Accept-Encoding"))
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "secret-token=abc123 internal error\nmore detail")
	})
	mux.HandleFunc("/to-ok", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/to-fail", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/fail", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/no-location", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusMultipleChoices) })
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the rest never comes
	})
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	// The same server under another host name: a redirect there is to
	// another host, which a check does not follow.
	other := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other+"/fail", http.StatusTemporaryRedirect)
	})
	tlsSrv := httptest.NewTLSServer(mux) // self-signed: probes do not verify
	defer tlsSrv.Close()
	closed := httptest.NewServer(mux)
	closed.Close()

	client := httpcheck.NewClient()
	for _, tc := range []struct {
		name    string
		check   HTTPCheck
		want    outcome // msg: a part of the message
		timeout time.Duration
	}{
		{name: "200", check: HTTPCheck{URL: srv.URL + "/ok"}, want: outcome{ok: true, msg: "HTTP 200"}},
		{name: "503: the body is not shown", check: HTTPCheck{URL: srv.URL + "/fail"}, want: outcome{msg: "HTTP 503"}},
		{name: "same host redirect followed", check: HTTPCheck{URL: srv.URL + "/to-ok"}, want: outcome{ok: true, msg: "HTTP 200"}},
		{name: "same host redirect to a failure", check: HTTPCheck{URL: srv.URL + "/to-fail"}, want: outcome{msg: "HTTP 503"}},
		{name: "redirect loop", check: HTTPCheck{URL: srv.URL + "/loop"}, want: outcome{msg: "stopped after 10 redirects"}},
		{name: "another host: success with a warning", check: HTTPCheck{URL: srv.URL + "/elsewhere"},
			want: outcome{ok: true, msg: "HTTP 307", warning: "HTTP 307: the redirect to another host (" + strings.TrimPrefix(other, "http://") + ") was not followed"}},
		{name: "3xx without Location", check: HTTPCheck{URL: srv.URL + "/no-location"},
			want: outcome{ok: true, msg: "HTTP 300", warning: "HTTP 300 without a redirect to follow"}},
		{name: "404", check: HTTPCheck{URL: srv.URL + "/nothing"}, want: outcome{msg: "HTTP 404"}},
		{name: "expect 204 got 204", check: HTTPCheck{URL: srv.URL + "/nocontent", ExpectStatus: 204}, want: outcome{ok: true, msg: "HTTP 204"}},
		{name: "expect 204 got 200", check: HTTPCheck{URL: srv.URL + "/ok", ExpectStatus: 204}, want: outcome{msg: "HTTP 200 (want 204)"}},
		{name: "expect 503 got 503", check: HTTPCheck{URL: srv.URL + "/fail", ExpectStatus: 503}, want: outcome{ok: true, msg: "HTTP 503"}},
		{name: "https self-signed", check: HTTPCheck{URL: tlsSrv.URL + "/ok"}, want: outcome{ok: true, msg: "HTTP 200"}},
		{name: "refused", check: HTTPCheck{URL: closed.URL + "/ok"}, want: outcome{msg: "connection refused"}},
		{name: "a body that stalls past the timeout fails", check: HTTPCheck{URL: srv.URL + "/stall"},
			want: outcome{msg: "HTTP 200: reading the body"}, timeout: 200 * time.Millisecond},
		{name: "a request that cannot be built is an error", check: HTTPCheck{URL: "http://[::1/x"},
			want: outcome{errored: true, msg: "probe error: building the request"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			got := checkHTTP(ctx, client, &tc.check)
			if got.ok != tc.want.ok || got.errored != tc.want.errored || got.warning != tc.want.warning || !strings.Contains(got.msg, tc.want.msg) {
				t.Fatalf("checkHTTP = %+v; want %+v", got, tc.want)
			}
			if strings.Contains(got.msg, "secret") {
				t.Fatalf("the message shows the body: %q", got.msg)
			}
		})
	}

	o := checkHTTP(t.Context(), client, &HTTPCheck{URL: srv.URL + "/ok", Headers: map[string]string{"X-Probe": "yes", "host": "web.internal"}})
	if !o.ok {
		t.Fatalf("with headers: %s", o.msg)
	}
	if gotHost.Load() != "web.internal" || gotHeader.Load() != "yes" || gotUA.Load() != "supervise-probe/dev" ||
		gotAccept.Load() != "*/*" || gotEncoding.Load() != "" {
		t.Fatalf("server saw Host %q, X-Probe %q, User-Agent %q, Accept %q, Accept-Encoding %q; want web.internal, yes, supervise-probe/dev, */*, none",
			gotHost.Load(), gotHeader.Load(), gotUA.Load(), gotAccept.Load(), gotEncoding.Load())
	}
	o = checkHTTP(t.Context(), client, &HTTPCheck{URL: srv.URL + "/ok", Headers: map[string]string{"User-Agent": "mine/1", "Accept": "application/json"}})
	if !o.ok || gotUA.Load() != "mine/1" || gotAccept.Load() != "application/json" {
		t.Fatalf("own User-Agent and Accept: %+v; server saw %q, %q", o, gotUA.Load(), gotAccept.Load())
	}
}

func TestCheckTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if o := checkTCP(t.Context(), addr); !o.ok || o.msg != "tcp "+addr+": connected" {
		t.Fatalf("open port: %+v", o)
	}
	ln.Close()
	if o := checkTCP(t.Context(), addr); o.ok || !strings.Contains(o.msg, "connection refused") {
		t.Fatalf("closed port: %+v; want refused", o)
	}
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(deadline):
		t.Fatalf("no %s within %v", what, deadline)
		panic("unreachable")
	}
}

// waitArmed blocks until a timer is armed at at, which for a probe timer
// means the probe before it has finished.
func waitArmed(t *testing.T, c *fakeclock.Clock, at time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	if err := c.WaitForWaiterAt(ctx, at); err != nil {
		t.Fatalf("no timer armed at %v within %v", at, deadline)
	}
}

// TestRunnerHTTPReadiness: an HTTP readiness probe against a real server
// makes the program ready and unready as the server answers, one probe per
// period of the fake clock.
func TestRunnerHTTPReadiness(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusServiceUnavailable)
	hits := make(chan int, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := int(status.Load())
		w.WriteHeader(code)
		hits <- code
	}))
	defer srv.Close()

	clock := fakeclock.New(t0)
	changes := make(chan Status, 16)
	r, err := Start(Config{
		Readiness: &Spec{HTTP: &HTTPCheck{URL: srv.URL + "/healthz"}, Period: 10 * s, FailureThreshold: 1},
		Clock:     clock,
		OnChange:  func(st Status) { changes <- st },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()

	recv(t, hits, "first probe") // at once, 503: not ready, no change
	waitArmed(t, clock, t0.Add(10*s))
	status.Store(http.StatusOK)
	clock.SetTime(t0.Add(10 * s))
	recv(t, hits, "second probe")
	if st := recv(t, changes, "change to ready"); !st.Ready || st.Last[Readiness].Message != "HTTP 200" {
		t.Fatalf("change = %+v, want ready with HTTP 200", st)
	}
	waitArmed(t, clock, t0.Add(20*s))
	status.Store(http.StatusInternalServerError)
	clock.SetTime(t0.Add(20 * s))
	recv(t, hits, "third probe")
	if st := recv(t, changes, "change to not ready"); st.Ready || st.Last[Readiness].Message != "HTTP 500" {
		t.Fatalf("change = %+v, want not ready with HTTP 500", st)
	}
	select {
	case <-hits:
		t.Fatal("a probe ran without the clock moving")
	default:
	}
}

// TestRunnerHTTPTimeout: a server that never answers fails the probe when
// the fake clock passes the timeout.
func TestRunnerHTTPTimeout(t *testing.T) {
	arrived := make(chan struct{}, 4)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	clock := fakeclock.New(t0)
	changes := make(chan Status, 4)
	r, err := Start(Config{
		Liveness: &Spec{HTTP: &HTTPCheck{URL: srv.URL}, Timeout: 3 * s, FailureThreshold: 1},
		Clock:    clock,
		OnChange: func(st Status) { changes <- st },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	recv(t, arrived, "the probe's request")
	if !clock.HasWaiterAt(t0.Add(3 * s)) {
		t.Fatal("no timeout armed at t0+3s")
	}
	clock.SetTime(t0.Add(3 * s))
	st := recv(t, changes, "liveness failure")
	if !st.LivenessFailed || st.Failure != "liveness probe failed 1 times: timed out after 3s" {
		t.Fatalf("status = %+v, want failed by timeout", st)
	}
}

// TestRunnerTCPLiveness: a liveness probe connecting to a real listener
// fails once the listener is gone.
func TestRunnerTCPLiveness(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	clock := fakeclock.New(t0)
	changes := make(chan Status, 4)
	r, err := Start(Config{
		Liveness: &Spec{TCP: ln.Addr().String(), Period: 10 * s, FailureThreshold: 1},
		Clock:    clock,
		OnChange: func(st Status) { changes <- st },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	recv(t, accepted, "first connect")
	waitArmed(t, clock, t0.Add(10*s))
	ln.Close()
	clock.SetTime(t0.Add(10 * s))
	st := recv(t, changes, "liveness failure")
	if !st.LivenessFailed || !strings.Contains(st.Failure, "connection refused") || !st.Last[Liveness].Time.Equal(t0.Add(10*s)) {
		t.Fatalf("status = %+v, want failed at t0+10s with connection refused", st)
	}
}

// TestRunnerRealClock: with the real clock a refused port fails the
// liveness probe after FailureThreshold periods.
func TestRunnerRealClock(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	changes := make(chan Status, 4)
	start := time.Now()
	r, err := Start(Config{
		Liveness: &Spec{TCP: addr, Period: 20 * time.Millisecond, Timeout: deadline, FailureThreshold: 3},
		OnChange: func(st Status) { changes <- st },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	st := recv(t, changes, "liveness failure")
	if !st.LivenessFailed {
		t.Fatalf("status = %+v", st)
	}
	// Three probes at 0, 20, 40 ms: never before the third was due.
	if took := time.Since(start); took < 40*time.Millisecond {
		t.Fatalf("failed after %v, before the third probe was due", took)
	}
}
