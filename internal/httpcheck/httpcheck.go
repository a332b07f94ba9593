// Package httpcheck is the HTTP side of probes and hooks: the one client
// they use and how a request is built from a config's url and headers, so
// that both treat Host, User-Agent, proxies, redirects and certificates
// alike, as the kubelet treats its httpGet probes and handlers.
package httpcheck

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/supervise-dev/supervise/internal/version"
)

// MaxRedirects bounds a chain of redirects to the same host: a check makes
// at most this many requests, so it follows MaxRedirects-1 redirects and
// fails at the next, as the kubelet (and Go's default client) do.
const MaxRedirects = 10

// NewClient returns the client: no keep-alives (a check every few seconds
// must not pile up idle connections in the program), no proxy from the
// environment (the target is the program, usually on localhost), no
// compression (a check reads status codes, and a gzip bomb is nothing it
// should inflate), certificates not verified, as the kubelet does: a check
// asks "are you up?" and sends nothing that needs the server
// authenticated. Redirects to the same host are followed (MaxRedirects
// requests in all); one to another host is not: its 3xx is the answer.
func NewClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:              nil,
			DisableKeepAlives:  true,
			DisableCompression: true,
			TLSClientConfig:    &tls.Config{InsecureSkipVerify: true},
		},
		CheckRedirect: sameHostRedirects,
	}
}

// errTooManyRedirects ends a chain of redirects; the check fails.
var errTooManyRedirects = errors.New("stopped after 10 redirects")

func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= MaxRedirects {
		return errTooManyRedirects
	}
	return nil
}

// UserAgent is what a check of kind ("probe", "hook") sends unless its
// headers name their own: supervise-probe/VERSION, as the kubelet sends
// kube-probe/VERSION.
func UserAgent(kind string) string { return "supervise-" + kind + "/" + version.Version }

// NewRequest builds the request of a check: method (GET when empty) on
// rawURL with headers, of which "Host" (any case) sets the Host the server
// sees; userAgent and "Accept: */*" are sent unless the headers name their
// own.
func NewRequest(ctx context.Context, method, rawURL string, headers map[string]string, userAgent string) (*http.Request, error) {
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "*/*")
	for k, v := range headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = v // net/http ignores a Host in Header
			continue
		}
		req.Header.Set(k, v)
	}
	return req, nil
}

// OK says whether status answers the check: the one expected when given,
// else any 2xx or 3xx, as the kubelet counts.
func OK(status, expect int) bool {
	if expect != 0 {
		return status == expect
	}
	return status >= 200 && status < 400
}

// Unfollowed says, for a reply the client did not follow any further (a
// 3xx: a redirect to another host, or without a Location), a short
// warning naming the host it pointed to; "" for any other reply. The
// kubelet counts such a reply as a success with a warning. The host is
// cut to 253 bytes, the longest DNS name: the program chooses it.
func Unfollowed(resp *http.Response) string {
	if resp.StatusCode < 300 || resp.StatusCode >= 400 {
		return ""
	}
	loc, err := resp.Location()
	if err != nil || loc.Host == "" {
		return fmt.Sprintf("HTTP %d without a redirect to follow", resp.StatusCode)
	}
	h := loc.Host
	if len(h) > 253 {
		h = h[:253]
	}
	return fmt.Sprintf("HTTP %d: the redirect to another host (%s) was not followed", resp.StatusCode, h)
}

// Unwrap drops the *url.Error wrapper, whose text repeats the method and
// URL that a message names already.
func Unwrap(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
