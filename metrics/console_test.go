package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const hostile = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`

func consoleSource() *fakeSource {
	start := time.Now().Add(-time.Minute)
	return &fakeSource{
		snap: Snapshot{States: states, Programs: []Program{
			{Name: "web", Program: "web", Instance: "0", State: "Running", Ready: true, Pid: 4242, StartedAt: start, Restarts: 2, Stats: true, MemoryBytes: 3 << 20},
			{Name: "evil", Program: "evil", Instance: "0", State: "Failed", LastExit: &Exit{Code: 1, Reason: "Error"}},
		}},
		runs: map[string]Run{"evil": {Status: 1, Code: 1, Reason: "Error", Message: hostile, Stdout: []string{hostile}, Stderr: []string{"<b>bold</b>"}}},
		logs: map[string][]LogLine{"evil": {{Stream: "stdout", Text: hostile}}, "web": nil},
	}
}

// The page is rendered on the server: every program, its state and pid,
// with what a program wrote shown as text, never as markup.
func TestConsolePageEscapes(t *testing.T) {
	h := NewHandler(consoleSource(), Build{})
	code, body, hdr := scrape(t, h, "GET", "/")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", code, hdr.Get("Content-Type"))
	}
	for _, want := range []string{"web", "Running", "4242", "evil", "Failed", `name="viewport"`, "3.0Mi",
		"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt;", "&lt;b&gt;bold&lt;/b&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("GET / lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>alert", "<img src=x", "<b>bold"} {
		if strings.Contains(body, bad) {
			t.Errorf("GET / holds %q unescaped", bad)
		}
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q", csp)
	}
	if strings.Count(body, "<script") != 1 || !strings.Contains(body, `<script src="/console.js">`) {
		t.Errorf("the page has a script besides its own")
	}
	// The JSON the script reads carries the texts as data.
	code, body, _ = scrape(t, h, "GET", "/api/logs?name=evil")
	if code != 200 || !strings.Contains(body, `\u003cscript\u003e`) {
		t.Errorf("/api/logs: %d %s", code, body)
	}
	if code, _, _ := scrape(t, h, "GET", "/api/logs?name=nope"); code != 404 {
		t.Errorf("/api/logs of an unknown name: %d", code)
	}
	code, body, _ = scrape(t, h, "GET", "/api/state")
	if code != 200 || !strings.Contains(body, `"pid":4242`) || !strings.Contains(body, `"control":false`) {
		t.Errorf("/api/state: %d %s", code, body)
	}
}

// The control verbs: 404 on a read-only listener; with a token, 401
// without it or with a wrong one, for every verb; passed through with it.
func TestConsoleControlToken(t *testing.T) {
	verbs := []string{"status", "why", "start", "stop", "restart", "scale", "signal", "logs", "events", "reload", "shutdown"}
	var reached []string
	ctlH := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.URL.Path)
		w.Write([]byte(`{"ok":true}`))
	})
	ro := NewHandler(consoleSource(), Build{})
	h := NewHandler(consoleSource(), Build{})
	const token = "s3cret-token-0123456789"
	h.Control(ctlH, token)
	for _, v := range verbs {
		for _, m := range []string{"GET", "POST"} {
			if code := do(t, ro, m, "/v1/"+v, ""); code != 404 {
				t.Errorf("read-only %s /v1/%s: %d, want 404", m, v, code)
			}
			for _, auth := range []string{"", "Bearer", "Bearer ", "Bearer wrong", "Bearer " + token + "x", "Basic " + token, "bearer " + token, token} {
				if code := do(t, h, m, "/v1/"+v, auth); code != 401 {
					t.Errorf("%s /v1/%s with Authorization %q: %d, want 401", m, v, auth, code)
				}
			}
		}
	}
	if len(reached) != 0 {
		t.Fatalf("the verbs were reached without the token: %q", reached)
	}
	if code := do(t, h, "POST", "/v1/restart", "Bearer "+token); code != 200 || len(reached) != 1 {
		t.Errorf("with the token: %d, reached %q", code, reached)
	}
}

func do(t *testing.T, h http.Handler, method, path, auth string) int {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(`{"names":["web"]}`))
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}
