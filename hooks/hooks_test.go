package hooks

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
