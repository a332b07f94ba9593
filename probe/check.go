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

// userAgent is sent unless the probe sets its own.
const userAgent = "supervise-probe/1"

// check runs s once under ctx and says whether it passed, with a short
// message for status.
func (r *Runner) check(ctx context.Context, s *Spec) (ok bool, msg string) {
	switch {
	case len(s.Command) > 0:
		return r.checkCommand(ctx, s.Command)
	case s.HTTP != nil:
		return checkHTTP(ctx, r.client, s.HTTP)
	default:
		return checkTCP(ctx, s.TCP)
	}
}

func (r *Runner) checkCommand(ctx context.Context, argv []string) (bool, string) {
	cfg := r.cfg.ExecConfig
	cfg.Args = argv
	out := &capBuffer{max: maxOutput}
	cfg.Stdout, cfg.Stderr = out, out
	res, err := r.cfg.Exec.Exec(ctx, r.cfg.SandboxID, cfg)
	switch {
	case err != nil:
		return false, fmt.Sprintf("running %q: %v", argv[0], err)
	case res.TimedOut:
		return false, "timed out" // the caller names the timeout
	case res.Signal != 0:
		return false, withOutput(fmt.Sprintf("killed by signal %s", res.Signal), out.String())
	case res.ExitCode != 0:
		return false, withOutput(fmt.Sprintf("exit code %d", res.ExitCode), out.String())
	}
	return true, withOutput("exit code 0", out.String())
}

func checkHTTP(ctx context.Context, client *http.Client, h *HTTPCheck) (bool, string) {
	req, err := httpcheck.NewRequest(ctx, http.MethodGet, h.URL, h.Headers, userAgent)
	if err != nil {
		return false, fmt.Sprintf("building request: %v", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, fmt.Sprintf("GET %s: %v", h.URL, httpcheck.Unwrap(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	ok := httpcheck.OK(resp.StatusCode, h.ExpectStatus)
	msg := fmt.Sprintf("HTTP %d", resp.StatusCode)
	if !ok {
		if h.ExpectStatus != 0 {
			msg += fmt.Sprintf(" (want %d)", h.ExpectStatus)
		}
		msg = withOutput(msg, string(body))
	}
	return ok, msg
}

func checkTCP(ctx context.Context, addr string) (bool, string) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, fmt.Sprintf("tcp %s: %v", addr, err)
	}
	conn.Close()
	return true, "tcp " + addr + ": connected"
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
