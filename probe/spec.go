package probe

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"
)

// The kubelet's defaults, taken by zero fields of a Spec.
const (
	DefaultPeriod           = 10 * time.Second
	DefaultTimeout          = 1 * time.Second
	DefaultSuccessThreshold = 1
	DefaultFailureThreshold = 3
)

// Kinds of probe, the keys of Status.Last.
const (
	Startup   = "startup"
	Readiness = "readiness"
	Liveness  = "liveness"
)

// Spec is one probe: exactly one of Command, HTTP and TCP, and its timing.
// Zero timing fields take the kubelet's defaults (see WithDefaults).
type Spec struct {
	// Command runs inside the program's sandbox; exit status 0 is success.
	Command []string
	// HTTP is a GET; success is a 2xx or 3xx reply, or exactly
	// ExpectStatus when set.
	HTTP *HTTPCheck
	// TCP is a host:port; success is a completed connect.
	TCP string

	// InitialDelay is counted from the process start; no probe runs before.
	InitialDelay time.Duration
	// Period between two probes (default 10s).
	Period time.Duration
	// Timeout of one probe (default 1s), counted from when it runs; a
	// probe past it is a failure.
	Timeout time.Duration
	// SuccessThreshold consecutive successes make a failed probe succeed
	// again (default 1; must be 1 for startup and liveness probes).
	SuccessThreshold int
	// FailureThreshold consecutive failures make the probe fail (default 3).
	FailureThreshold int
}

// HTTPCheck is an HTTP GET probe.
type HTTPCheck struct {
	URL string // absolute http:// or https:// URL
	// Headers are set on the request; "Host" sets the Host header.
	Headers map[string]string
	// ExpectStatus, when not 0, is the only status that counts as success.
	ExpectStatus int
}

// WithDefaults returns s with its zero timing fields set to the kubelet's
// defaults.
func (s Spec) WithDefaults() Spec {
	if s.Period <= 0 {
		s.Period = DefaultPeriod
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.SuccessThreshold <= 0 {
		s.SuccessThreshold = DefaultSuccessThreshold
	}
	if s.FailureThreshold <= 0 {
		s.FailureThreshold = DefaultFailureThreshold
	}
	return s
}

// validate checks s (with defaults applied) as a probe of the given kind.
func (s Spec) validate(kind string) error {
	n := 0
	if len(s.Command) > 0 {
		n++
	}
	if s.HTTP != nil {
		n++
		u, err := url.Parse(s.HTTP.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s probe: %q is not an http:// or https:// URL", kind, s.HTTP.URL)
		}
	}
	if s.TCP != "" {
		n++
		if _, _, err := net.SplitHostPort(s.TCP); err != nil {
			return fmt.Errorf("%s probe: tcp %q: %w", kind, s.TCP, err)
		}
	}
	switch {
	case n == 0:
		return fmt.Errorf("%s probe: needs a command, an http check or a tcp address", kind)
	case n > 1:
		return fmt.Errorf("%s probe: a probe is one of command, http and tcp", kind)
	case s.InitialDelay < 0:
		return fmt.Errorf("%s probe: negative initial delay %v", kind, s.InitialDelay)
	case kind != Readiness && s.SuccessThreshold != 1:
		return fmt.Errorf("%s probe: success threshold must be 1 (got %d)", kind, s.SuccessThreshold)
	}
	return nil
}

var errTimeout = errors.New("timed out")
