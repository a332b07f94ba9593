package hooks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
)

// An HTTP hook sends its Host header (net/http ignores one set among the
// headers) and its own User-Agent, follows a redirect to the same host,
// and takes any status as done, as the kubelet does, unless ExpectStatus
// names one.
func TestHTTPHook(t *testing.T) {
	var host, ua, method, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, ua, method, path = r.Host, r.UserAgent(), r.Method, r.URL.Path
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/teapot":
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	var r Runner
	err := r.Run(t.Context(), Spec{HTTP: &HTTP{URL: srv.URL + "/drain", Method: "POST", Headers: map[string]string{"host": "app.internal"}}, Timeout: 10 * time.Second},
		Call{Phase: PreStop})
	if err != nil || host != "app.internal" || ua != "supervise-hook/dev" || method != "POST" {
		t.Fatalf("hook: %v; server saw Host %q, User-Agent %q, %s", err, host, ua, method)
	}
	if err := r.Run(t.Context(), Spec{HTTP: &HTTP{URL: srv.URL + "/moved"}}, Call{Phase: PostStart}); err != nil || path != "/elsewhere" {
		t.Fatalf("a same-host 302: %v, last path %q; want it followed", err, path)
	}
	if err := r.Run(t.Context(), Spec{HTTP: &HTTP{URL: srv.URL + "/teapot"}}, Call{Phase: PostStart}); err != nil {
		t.Fatalf("a 418 without expect_status failed the hook: %v", err)
	}
	if err := r.Run(t.Context(), Spec{HTTP: &HTTP{URL: srv.URL + "/teapot", ExpectStatus: 418}}, Call{Phase: PostStart}); err != nil {
		t.Fatalf("an expected 418: %v", err)
	}
	err = r.Run(t.Context(), Spec{HTTP: &HTTP{URL: srv.URL + "/teapot", ExpectStatus: 200}}, Call{Phase: PostStart})
	if err == nil || !strings.Contains(err.Error(), "status 418, want 200") {
		t.Fatalf("a 418 where 200 is expected: %v", err)
	}
}

// A sleep hook waits its time on the clock and runs nothing (the Runner
// has no Execer); the caller's context ending first cuts it short, an
// error, as the kubelet's sleep action is when the container goes first.
func TestSleepHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := fakeclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
		r := Runner{Clock: c}
		done := make(chan error, 1)
		go func() {
			done <- r.Run(t.Context(), Spec{Sleep: 5 * time.Second, Timeout: time.Hour}, Call{Phase: PreStop})
		}()
		synctest.Wait()
		c.Step(5*time.Second - time.Nanosecond)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the sleep ended before its 5s: %v", err)
		default:
		}
		c.Step(time.Nanosecond)
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("sleep: %v", err)
			}
		default:
			t.Fatal("the sleep did not end at 5s")
		}

		ctx, cancel := context.WithCancel(t.Context())
		go func() { done <- r.Run(ctx, Spec{Sleep: 5 * time.Second, Timeout: time.Hour}, Call{Phase: PreStop}) }()
		synctest.Wait()
		cancel()
		if err := <-done; err == nil || !strings.Contains(err.Error(), "pre_stop hook: sleep 5s cut short") {
			t.Fatalf("a sleep its caller ended: %v, want it cut short", err)
		}
		if n := c.Waiters(); n != 0 {
			t.Fatalf("%d timers left", n)
		}
	})
}
