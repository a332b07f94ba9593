package hooks

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// An HTTP hook sends its Host header (net/http ignores one set among the
// headers), its own User-Agent, and counts a 3xx as an answer instead of
// following it; an unexpected status is an error naming it.
func TestHTTPHook(t *testing.T) {
	var host, ua, method string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, ua, method = r.Host, r.UserAgent(), r.Method
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/elsewhere":
			t.Error("the redirect was followed")
		case "/teapot":
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	var r Runner
	err := r.Run(t.Context(), Spec{HTTP: &HTTP{URL: srv.URL + "/drain", Method: "POST", Headers: map[string]string{"host": "app.internal"}}, Timeout: 10 * time.Second},
		Call{Phase: PreStop})
	if err != nil || host != "app.internal" || ua != userAgent || method != "POST" {
		t.Fatalf("hook: %v; server saw Host %q, User-Agent %q, %s", err, host, ua, method)
	}
	if err := r.Run(t.Context(), Spec{HTTP: &HTTP{URL: srv.URL + "/moved"}}, Call{Phase: PostStart}); err != nil {
		t.Fatalf("a 302 failed the hook: %v", err)
	}
	err = r.Run(t.Context(), Spec{HTTP: &HTTP{URL: srv.URL + "/teapot"}}, Call{Phase: PostStart})
	if err == nil || !strings.Contains(err.Error(), "status 418") {
		t.Fatalf("a 418: %v", err)
	}
	if err := r.Run(t.Context(), Spec{HTTP: &HTTP{URL: srv.URL + "/teapot", ExpectStatus: 418}}, Call{Phase: PostStart}); err != nil {
		t.Fatalf("an expected 418: %v", err)
	}
}
