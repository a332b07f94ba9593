package probe

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/supervise-dev/supervise/internal/httpcheck"
)

// maxOutput bounds what a probe keeps of a command's output or an HTTP
// body for its message (the kubelet keeps 10 KiB); the message itself is
// cut much shorter.
const (
	maxOutput  = 10 << 10
	maxMessage = 256
)

// outcome is what one probe run says. errored means the probe could not
// run at all (its command could not be started, its request not built):
// as the kubelet does, such a run is reported but not counted, neither as
// a success nor as a failure. warning is set on a success the kubelet
// would warn about (a redirect to another host, not followed).
type outcome struct {
	ok, errored bool
	msg         string
	warning     string
}

// check runs s once under ctx.
func (r *Runner) check(ctx context.Context, s *Spec) outcome {
	switch {
	case len(s.Command) > 0:
		return r.checkCommand(ctx, s.Command)
	case s.HTTP != nil:
		return checkHTTP(ctx, r.client, s.HTTP)
	default:
		return checkTCP(ctx, s.TCP)
	}
}

func (r *Runner) checkCommand(ctx context.Context, argv []string) outcome {
	cfg := r.cfg.ExecConfig
	cfg.Args = argv
	out := &capBuffer{max: maxOutput}
	cfg.Stdout, cfg.Stderr = out, out
	res, err := r.cfg.Exec.Exec(ctx, r.cfg.SandboxID, cfg)
	switch {
	case err != nil && ctx.Err() == nil:
		return outcome{errored: true, msg: fmt.Sprintf("probe error: running %q: %v", argv[0], err)}
	case err != nil, res.TimedOut:
		return outcome{msg: "timed out"} // the caller names the timeout
	case res.Signal != 0:
		return outcome{msg: withOutput(fmt.Sprintf("killed by signal %s", res.Signal), out.String())}
	case res.ExitCode != 0:
		return outcome{msg: withOutput(fmt.Sprintf("exit code %d", res.ExitCode), out.String())}
	}
	return outcome{ok: true, msg: withOutput("exit code 0", out.String())}
}

// checkHTTP: any reply in 200–399 (or exactly ExpectStatus) passes; a
// failure to connect, a timeout, too many redirects or a body that stalls
// past the timeout fails. The body is read (up to maxOutput) so that a
// stalled one is seen, and never kept: it is the program's, and may hold
// what status and events must not show.
func checkHTTP(ctx context.Context, client *http.Client, h *HTTPCheck) outcome {
	req, err := httpcheck.NewRequest(ctx, http.MethodGet, h.URL, h.Headers, httpcheck.UserAgent("probe"))
	if err != nil {
		return outcome{errored: true, msg: fmt.Sprintf("probe error: building the request: %v", err)}
	}
	resp, err := client.Do(req)
	if err != nil {
		return outcome{msg: fmt.Sprintf("GET %s: %v", h.URL, httpcheck.Unwrap(err))}
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxOutput)); err != nil {
		return outcome{msg: fmt.Sprintf("HTTP %d: reading the body: %v", resp.StatusCode, err)}
	}
	ok := httpcheck.OK(resp.StatusCode, h.ExpectStatus)
	msg := fmt.Sprintf("HTTP %d", resp.StatusCode)
	if !ok && h.ExpectStatus != 0 {
		msg += fmt.Sprintf(" (want %d)", h.ExpectStatus)
	}
	o := outcome{ok: ok, msg: msg}
	if ok && h.ExpectStatus == 0 {
		o.warning = httpcheck.Unfollowed(resp)
	}
	return o
}

func checkTCP(ctx context.Context, addr string) outcome {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return outcome{msg: fmt.Sprintf("tcp %s: %v", addr, err)}
	}
	conn.Close()
	return outcome{ok: true, msg: "tcp " + addr + ": connected"}
}

// withOutput appends the first line of out to msg, cut short.
func withOutput(msg, out string) string {
	out = strings.TrimSpace(out)
	if i := strings.IndexByte(out, '\n'); i >= 0 {
		out = strings.TrimSpace(out[:i]) + " …"
	}
	if out == "" {
		return msg
	}
	if len(out) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut] + "…"
	}
	return msg + ": " + out
}

// capBuffer keeps the first max bytes written to it and discards the rest
// without failing the writer. It is safe for the two output copies of an
// Exec.
type capBuffer struct {
	max int
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *capBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
