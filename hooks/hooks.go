// Package hooks runs a program's lifecycle hooks: pre_start, post_start,
// pre_stop and post_stop. A hook is a command run inside the program's
// sandbox (through the runtime's Exec, as the kubelet runs its hooks through
// the CRI), an HTTP request, or a sleep. Every hook has its own timeout; what
// a failure means (fail the start, log only) is the caller's policy, not
// ours.
package hooks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/supervise-dev/supervise/clock"
	"github.com/supervise-dev/supervise/internal/httpcheck"
	"github.com/supervise-dev/supervise/proc"
)

// Phase names a point in the lifecycle.
type Phase string

const (
	PreStart  Phase = "pre_start"
	PostStart Phase = "post_start"
	PreStop   Phase = "pre_stop"
	PostStop  Phase = "post_stop"
)

// DefaultTimeout bounds a hook that names no timeout of its own.
const DefaultTimeout = 30 * time.Second

// Spec describes one hook. Exactly one of Command, HTTP and Sleep is set.
type Spec struct {
	Command []string
	HTTP    *HTTP
	// Sleep waits that long and runs nothing (the kubelet's sleep
	// action); the timeout, or the caller's context, cuts it short.
	Sleep   time.Duration
	Timeout time.Duration
}

// HTTP is a hook that is an HTTP request. Any reply is a success, as the
// kubelet takes its lifecycle handlers' (what a hook asks for is done by
// the time it answers); with ExpectStatus set, only exactly that status.
// Redirects to the same host are followed; the body is drained, never
// kept.
type HTTP struct {
	URL          string
	Method       string
	Headers      map[string]string
	ExpectStatus int
}

// Execer runs a command inside a sandbox; *proc.Runtime implements it.
type Execer interface {
	Exec(ctx context.Context, sandboxID string, cfg proc.ExecConfig) (proc.ExecResult, error)
}

// Call is one invocation of a hook.
type Call struct {
	Phase     Phase
	SandboxID string
	// Exec is the identity and environment the command runs with: the
	// program's user, directory and environment plus the SUPERVISE_* exit
	// variables. Args is replaced by the hook's command.
	Exec proc.ExecConfig
	// Output receives the hook's stdout and stderr (the program's log).
	Output io.Writer
}

// Runner runs hooks.
type Runner struct {
	Exec   Execer
	Client *http.Client // nil: httpcheck's client (the hook's timeout applies)
	Logger *slog.Logger
	// Clock times sleeps; nil is the real clock. (Timeouts are the
	// context's, which the Execer also reads.)
	Clock clock.Clock
}

// defaultClient is the client of HTTP hooks, the one probes use.
var defaultClient = httpcheck.NewClient()

// ErrTimeout is wrapped by the error of a hook that ran past its timeout.
var ErrTimeout = errors.New("timed out")

// Run runs spec for call and returns nil only when the hook succeeded. A
// hook past its timeout is killed (command) or abandoned (HTTP) and reported
// as an error wrapping ErrTimeout.
func (r *Runner) Run(ctx context.Context, spec Spec, call Call) error {
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var err error
	switch {
	case len(spec.Command) > 0:
		err = r.runCommand(ctx, spec, call, timeout)
	case spec.HTTP != nil:
		err = r.runHTTP(ctx, spec.HTTP, timeout)
	case spec.Sleep > 0:
		err = r.sleep(ctx, spec.Sleep, timeout)
	default:
		err = errors.New("hook has neither command, http nor sleep")
	}
	if err != nil {
		return fmt.Errorf("%s hook: %w", call.Phase, err)
	}
	return nil
}

// sleep waits d on the runner's clock. Cut short by the timeout or the
// caller (a stop's grace ran out), it fails, as the kubelet's sleep
// action does when the container is gone before it ended.
func (r *Runner) sleep(ctx context.Context, d, timeout time.Duration) error {
	clk := r.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("sleep %s cut short: %w after %s", d, ErrTimeout, timeout)
		}
		return fmt.Errorf("sleep %s cut short: %w", d, ctx.Err())
	}
}

func (r *Runner) runCommand(ctx context.Context, spec Spec, call Call, timeout time.Duration) error {
	cfg := call.Exec
	cfg.Args = spec.Command
	if call.Output != nil {
		cfg.Stdout, cfg.Stderr = call.Output, call.Output
	}
	res, err := r.Exec.Exec(ctx, call.SandboxID, cfg)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("%q %w after %s", strings.Join(spec.Command, " "), ErrTimeout, timeout)
		}
		return fmt.Errorf("running %q: %w", strings.Join(spec.Command, " "), err)
	}
	switch {
	case res.TimedOut:
		return fmt.Errorf("%q %w after %s and was killed", strings.Join(spec.Command, " "), ErrTimeout, timeout)
	case res.Signal != 0:
		return fmt.Errorf("%q killed by signal %s", strings.Join(spec.Command, " "), res.Signal)
	case res.ExitCode != 0:
		return fmt.Errorf("%q exited with code %d", strings.Join(spec.Command, " "), res.ExitCode)
	}
	return nil
}

func (r *Runner) runHTTP(ctx context.Context, h *HTTP, timeout time.Duration) error {
	method := h.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := httpcheck.NewRequest(ctx, method, h.URL, h.Headers, httpcheck.UserAgent("hook"))
	if err != nil {
		return fmt.Errorf("building request: %w", err)
	}
	client := r.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("%s %s %w after %s", method, h.URL, ErrTimeout, timeout)
		}
		return fmt.Errorf("%s %s: %w", method, h.URL, httpcheck.Unwrap(err))
	}
	// The body is not ours to read; a little is drained for a clean close.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if h.ExpectStatus != 0 && resp.StatusCode != h.ExpectStatus {
		return fmt.Errorf("%s %s: status %d, want %d", method, h.URL, resp.StatusCode, h.ExpectStatus)
	}
	return nil
}
