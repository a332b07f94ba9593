package httpcheck

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/supervise-dev/supervise/internal/version"
)

// get runs one check against srv with NewClient and NewRequest.
func get(t *testing.T, method, url string, headers map[string]string) (*http.Response, error) {
	t.Helper()
	req, err := NewRequest(context.Background(), method, url, headers, UserAgent("probe"))
	if err != nil {
		t.Fatalf("NewRequest: %v", err)
	}
	resp, err := NewClient().Do(req)
	if err == nil {
		t.Cleanup(func() { resp.Body.Close() })
	}
	return resp, err
}

// TestRequest: what the program sees of a check.
func TestRequest(t *testing.T) {
	got := make(chan *http.Request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r }))
	defer srv.Close()

	for _, tc := range []struct {
		name         string
		method       string
		headers      map[string]string
		wantMethod   string
		wantHost     string
		wantUA       string
		wantAccept   string
		wantHeader   string // X-Custom
		wantNoHeader string // a header the request must not carry
	}{
		{name: "defaults", wantMethod: "GET", wantHost: strings.TrimPrefix(srv.URL, "http://"),
			wantUA: "supervise-probe/" + version.Version, wantAccept: "*/*"},
		{name: "host in any case", method: "HEAD", headers: map[string]string{"hOsT": "app.example", "X-Custom": "1"},
			wantMethod: "HEAD", wantHost: "app.example", wantUA: "supervise-probe/" + version.Version, wantAccept: "*/*",
			wantHeader: "1", wantNoHeader: "Host"},
		{name: "own user agent and accept", method: "POST", headers: map[string]string{"user-agent": "mine/1", "Accept": "text/plain"},
			wantMethod: "POST", wantHost: strings.TrimPrefix(srv.URL, "http://"), wantUA: "mine/1", wantAccept: "text/plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := get(t, tc.method, srv.URL+"/healthz", tc.headers)
			if err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.Method != tc.wantMethod || r.Host != tc.wantHost || r.URL.Path != "/healthz" {
				t.Errorf("%s %s (Host %s), want %s /healthz (Host %s)", r.Method, r.URL.Path, r.Host, tc.wantMethod, tc.wantHost)
			}
			if ua := r.Header.Get("User-Agent"); ua != tc.wantUA {
				t.Errorf("User-Agent %q, want %q", ua, tc.wantUA)
			}
			if a := r.Header.Values("Accept"); len(a) != 1 || a[0] != tc.wantAccept {
				t.Errorf("Accept %q, want just %q", a, tc.wantAccept)
			}
			if x := r.Header.Get("X-Custom"); x != tc.wantHeader {
				t.Errorf("X-Custom %q, want %q", x, tc.wantHeader)
			}
			if tc.wantNoHeader != "" && r.Header.Get(tc.wantNoHeader) != "" {
				t.Errorf("header %s sent as a header too", tc.wantNoHeader)
			}
			// No keep-alive: the program is not left with idle connections.
			if !r.Close {
				t.Error("the request asks to keep the connection")
			}
			// No compression asked for: a check has no body to inflate.
			if ae := r.Header.Get("Accept-Encoding"); ae != "" {
				t.Errorf("Accept-Encoding %q, want none", ae)
			}
			if resp.StatusCode != 200 {
				t.Errorf("status %d", resp.StatusCode)
			}
		})
	}
}

func TestNewRequestBadURL(t *testing.T) {
	if _, err := NewRequest(context.Background(), "", "http://[::1", nil, "x"); err == nil {
		t.Fatal("a bad URL gave no error")
	}
	if _, err := NewRequest(context.Background(), "BAD METHOD", "http://localhost/", nil, "x"); err == nil {
		t.Fatal("a bad method gave no error")
	}
}

// TestCompressedReplyNotInflated: a reply that says it is gzip is handed
// over as it came, not inflated (a gzip bomb costs the supervisor nothing).
func TestCompressedReplyNotInflated(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(bytes.Repeat([]byte{0}, 1<<20))
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(zipped.Bytes())
	}))
	defer srv.Close()
	resp, err := get(t, "", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 2<<20))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Uncompressed || len(body) != zipped.Len() {
		t.Fatalf("read %d bytes (uncompressed %v), want the %d compressed bytes as sent", len(body), resp.Uncompressed, zipped.Len())
	}
}

// TestNoProxy: a proxy in the environment is not used; the check goes to
// the program.
func TestNoProxy(t *testing.T) {
	var proxied atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Store(true)
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer proxy.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	resp, err := get(t, "", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if proxied.Load() || resp.StatusCode != 200 {
		t.Fatalf("status %d, through the proxy: %v; want 200 straight from the program", resp.StatusCode, proxied.Load())
	}
}

// TestTLSNotVerified: a program's self-signed certificate does not fail
// the check, as with the kubelet.
func TestTLSNotVerified(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	resp, err := get(t, "", srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
}

// TestRedirects: up to MaxRedirects on the same host are followed, one
// more fails the check; one to another host is the answer.
func TestRedirects(t *testing.T) {
	var hops atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the redirect to another host was followed")
	}))
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hops.Add(1)
		var n, left int
		switch {
		case r.URL.Path == "/away":
			http.Redirect(w, r, otherURL+"/there", http.StatusFound)
		case r.URL.Path == "/nowhere":
			w.WriteHeader(http.StatusFound) // no Location
		default:
			fmt.Sscanf(r.URL.Path, "/%d/%d", &n, &left)
			if left == 0 {
				fmt.Fprint(w, "arrived")
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/%d/%d", n, left-1), http.StatusFound)
		}
	}))
	defer srv.Close()

	// MaxRedirects requests in all, as the kubelet and Go's default: the
	// MaxRedirects-th redirect is refused.
	t.Run("as many as allowed", func(t *testing.T) {
		hops.Store(0)
		resp, err := get(t, "", fmt.Sprintf("%s/1/%d", srv.URL, MaxRedirects-1), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || Unfollowed(resp) != "" || hops.Load() != MaxRedirects {
			t.Fatalf("status %d after %d requests (%q), want 200 after %d", resp.StatusCode, hops.Load(), Unfollowed(resp), MaxRedirects)
		}
	})
	t.Run("one too many", func(t *testing.T) {
		hops.Store(0)
		_, err := get(t, "", fmt.Sprintf("%s/2/%d", srv.URL, MaxRedirects), nil)
		if n := hops.Load(); n != MaxRedirects {
			t.Errorf("%d requests, want %d", n, MaxRedirects)
		}
		if !errors.Is(err, errTooManyRedirects) {
			t.Fatalf("err %v, want %v", err, errTooManyRedirects)
		}
		if u := Unwrap(err); u != errTooManyRedirects {
			t.Errorf("Unwrap = %v, want the bare %v", u, errTooManyRedirects)
		}
	})
	t.Run("another host", func(t *testing.T) {
		resp, err := get(t, "", srv.URL+"/away", nil)
		if err != nil {
			t.Fatal(err)
		}
		want := "HTTP 302: the redirect to another host (" + strings.TrimPrefix(otherURL, "http://") + ") was not followed"
		if resp.StatusCode != 302 || Unfollowed(resp) != want {
			t.Fatalf("status %d, %q; want 302, %q", resp.StatusCode, Unfollowed(resp), want)
		}
		if !OK(resp.StatusCode, 0) {
			t.Error("an unfollowed redirect counts as a failure, want a success (with a warning)")
		}
	})
	t.Run("no location", func(t *testing.T) {
		resp, err := get(t, "", srv.URL+"/nowhere", nil)
		if err != nil {
			t.Fatal(err)
		}
		if u := Unfollowed(resp); resp.StatusCode != 302 || u != "HTTP 302 without a redirect to follow" {
			t.Fatalf("status %d, %q", resp.StatusCode, u)
		}
	})
}

// TestUnfollowedHostBounded: the host a program names in its Location
// is cut to the longest DNS name before it reaches a log.
func TestUnfollowedHostBounded(t *testing.T) {
	long := strings.Repeat("a", 10000) + ".example"
	resp := &http.Response{StatusCode: 301, Header: http.Header{"Location": {"http://" + long + "/"}},
		Request: &http.Request{Method: "GET"}}
	resp.Request, _ = http.NewRequest("GET", "http://localhost/", nil)
	got := Unfollowed(resp)
	if want := "HTTP 301: the redirect to another host (" + long[:253] + ") was not followed"; got != want {
		t.Fatalf("Unfollowed = %d bytes, want %d", len(got), len(want))
	}
	if Unfollowed(&http.Response{StatusCode: 200}) != "" || Unfollowed(&http.Response{StatusCode: 404}) != "" {
		t.Error("a non-3xx reply gave a warning")
	}
}

func TestOK(t *testing.T) {
	for _, tc := range []struct {
		status, expect int
		want           bool
	}{
		{200, 0, true}, {204, 0, true}, {302, 0, true}, {399, 0, true},
		{199, 0, false}, {400, 0, false}, {503, 0, false},
		{503, 503, true}, {200, 503, false}, {404, 404, true},
	} {
		if got := OK(tc.status, tc.expect); got != tc.want {
			t.Errorf("OK(%d, %d) = %v, want %v", tc.status, tc.expect, got, tc.want)
		}
	}
}

func TestUnwrap(t *testing.T) {
	inner := errors.New("connection refused")
	if got := Unwrap(&url.Error{Op: "Get", URL: "http://x", Err: inner}); got != inner {
		t.Errorf("Unwrap(url.Error) = %v, want %v", got, inner)
	}
	if got := Unwrap(inner); got != inner {
		t.Errorf("Unwrap(plain) = %v", got)
	}
}
