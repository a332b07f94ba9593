package pid1

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/clock"
	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/proc"
)

// DefaultGrace is how long the leftovers of an exited command get between
// the stop signal and SIGKILL when the caller has no opinion.
const DefaultGrace = 5 * time.Second

// Restart says when an exited command is started again.
type Restart string

const (
	RestartNever     Restart = "never" // the default
	RestartOnFailure Restart = "on-failure"
	RestartAlways    Restart = "always"
)

// ParseRestart reads a restart policy; "" is RestartNever.
func ParseRestart(s string) (Restart, error) {
	switch r := Restart(strings.TrimSpace(s)); r {
	case "":
		return RestartNever, nil
	case RestartNever, RestartOnFailure, RestartAlways:
		return r, nil
	}
	return "", fmt.Errorf("restart %q: want never, on-failure or always", s)
}

// Config configures Run. Only Args is required.
type Config struct {
	// Args is the command; Args[0] is looked up in the PATH of Env.
	Args []string
	// Env is the command's environment; nil means ours.
	Env []string
	// Stdin, Stdout and Stderr are the command's stdio; nil means ours.
	// When Stdin is our controlling terminal the command takes it over.
	Stdin, Stdout, Stderr *os.File

	// PreserveFDs is how many descriptors from 3 up the command gets on
	// top of stdio (socket activation's and --preserve-fds): the caller
	// leaves them open and marks everything above close-on-exec. The
	// first ListenFDs of them are socket-activation descriptors: the
	// command then gets LISTEN_FDS and a LISTEN_PID that names it (it is
	// started through a shim that sets it, as its pid is not known
	// before the fork).
	PreserveFDs, ListenFDs int

	// SingleChild forwards signals to the command alone instead of its
	// process group, and leaves what the command left behind alone when
	// it exits (dumb-init's --single-child).
	SingleChild bool
	// Rewrite maps a received signal to the one forwarded; a 0 target
	// drops it. Signals not in the map are forwarded as they are.
	Rewrite map[syscall.Signal]syscall.Signal
	// SuccessExitCodes are exit codes (128+N for a signal N) reported as 0.
	SuccessExitCodes []int

	// StopSignal goes to what the command left behind when it exited
	// (default SIGTERM); SIGKILL follows after Grace. A Grace of 0 kills
	// at once.
	StopSignal syscall.Signal
	Grace      time.Duration

	// Restart says when the command is started again; Backoff paces the
	// restarts (zero fields: the kubelet's 10s, 5m, 10m). Backoff.Clock
	// also drives the wait between restarts.
	Restart Restart
	Backoff backoff.CrashConfig

	// Sandbox, when set, runs the command in a proc sandbox.
	Sandbox *Sandbox

	// Logger gets the init's own logs; nil discards them.
	Logger *slog.Logger

	// Dedicated says the process exists for this Run and exits when it
	// returns (supervise exec). Run then leaves the signal handlers and
	// the subreaper flag as they are when it returns: the exit is that
	// much cheaper.
	Dedicated bool
}

// Sandbox asks for the command to run in a proc sandbox: a cgroup with
// limits and the namespaces listed.
type Sandbox struct {
	MemoryMax  int64 // bytes; 0 = no limit
	PidsMax    int64 // 0 = no limit
	Namespaces []proc.Namespace
	// InitArgs start this binary as a plain exec init inside the sandbox
	// (for example [/proc/self/exe exec --grace 5s --]); the command's
	// Args are appended. The runtime owns every wait4 of this process,
	// so the reaping and the grace-bounded cleanup inside the sandbox is
	// that init's job. Empty: the command runs in the sandbox directly
	// and its leftovers are killed without grace with the sandbox.
	InitArgs []string
}

// StartError is a command that could not be started: Code is 127 when it
// was not found, 126 when it could not be executed.
type StartError struct {
	Code int
	Err  error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// ExitCode is how an init reports a wait status: the exit code, or 128+N
// for a signal N, with the codes in success mapped to 0 (as tini's -e).
func ExitCode(ws syscall.WaitStatus, success []int) int {
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	return successCode(code, success)
}

func successCode(code int, success []int) int {
	if slices.Contains(success, code) {
		return 0
	}
	return code
}

// ParseRewrite reads a rewrite rule FROM:TO ("TERM:QUIT", "15:3"); a TO of
// 0 drops FROM (as dumb-init's --rewrite).
func ParseRewrite(s string) (from, to syscall.Signal, err error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("rewrite %q: want FROM:TO, like TERM:QUIT (TO 0 drops the signal)", s)
	}
	if from, err = unixsig.Parse(a); err != nil {
		return 0, 0, fmt.Errorf("rewrite %q: %w", s, err)
	}
	if from == syscall.SIGKILL || from == syscall.SIGSTOP {
		return 0, 0, fmt.Errorf("rewrite %q: %s never reaches the init", s, unixsig.Name(from))
	}
	if strings.TrimSpace(b) == "0" {
		return from, 0, nil
	}
	if to, err = unixsig.Parse(b); err != nil {
		return 0, 0, fmt.Errorf("rewrite %q: %w", s, err)
	}
	return from, to, nil
}

// isStopRequest: these signals ask the init to end; after one the command
// is not restarted.
func isStopRequest(sig syscall.Signal) bool {
	return sig == syscall.SIGTERM || sig == syscall.SIGINT || sig == syscall.SIGQUIT
}

func (c *Config) validate() error {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return errors.New("no command: give one after --, like `supervise exec -- CMD ARGS…`")
	}
	if _, err := ParseRestart(string(c.Restart)); err != nil {
		return err
	}
	if c.Grace < 0 {
		return fmt.Errorf("grace %v must not be negative", c.Grace)
	}
	if c.PreserveFDs < 0 || c.ListenFDs < 0 || c.ListenFDs > c.PreserveFDs {
		return fmt.Errorf("%d descriptors to pass with %d for socket activation: want 0 ≤ listen ≤ preserved", c.PreserveFDs, c.ListenFDs)
	}
	return nil
}

// withDefaults returns c with its zero fields filled in.
func (c Config) withDefaults() Config {
	if c.Env == nil {
		c.Env = os.Environ()
	}
	if c.Stdin == nil {
		c.Stdin = os.Stdin
	}
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	if c.StopSignal == 0 {
		c.StopSignal = syscall.SIGTERM
	}
	if c.Restart == "" {
		c.Restart = RestartNever
	}
	if c.Backoff.Clock == nil {
		c.Backoff.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// rewrite returns what to forward for a received signal (0: nothing).
func (c *Config) rewrite(sig syscall.Signal) syscall.Signal {
	if to, ok := c.Rewrite[sig]; ok {
		return to
	}
	return sig
}
