// Package httpcheck is the HTTP side of probes and hooks: the one client
// they use and how a request is built from a config's url and headers, so
// that both treat Host, User-Agent, proxies, redirects and certificates
// alike, as the kubelet treats its httpGet probes and handlers.
package httpcheck

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/url"
)

// NewClient returns the client: no keep-alives (a check every few seconds
// must not pile up idle connections in the program), no proxy from the
// environment (the target is the program, usually on localhost),
// redirects not followed (a 3xx is already an answer), and certificates
// not verified, as the kubelet does: a check asks "are you up?" and sends
// nothing that needs the server authenticated.
func NewClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             nil,
			DisableKeepAlives: true,
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// NewRequest builds the request of a check: method (GET when empty) on
// rawURL with headers, of which "Host" (any case) sets the Host the server
// sees; userAgent is sent unless the headers name their own.
func NewRequest(ctx context.Context, method, rawURL string, headers map[string]string, userAgent string) (*http.Request, error) {
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
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

// Unwrap drops the *url.Error wrapper, whose text repeats the method and
// URL that a message names already.
func Unwrap(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
