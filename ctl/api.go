package ctl

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/logs"
)

// Sentinel errors. Backends wrap ErrUnknownProgram; the client's
// [*ServerError] matches all three with errors.Is.
var (
	// ErrUnknownProgram is wrapped by a backend for a name it does not
	// know: fmt.Errorf("%w %q", ErrUnknownProgram, name).
	ErrUnknownProgram = errors.New("unknown program")
	// ErrPermissionDenied means the peer may not use the socket.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrAlreadyRunning is returned by [Server.Listen] when a live
	// supervisor already serves the socket.
	ErrAlreadyRunning = errors.New("supervise is already running")
)

// ExitInfo describes how a program instance last ended.
type ExitInfo struct {
	// Code is the exit status; for a signal N, 128+N (137 for KILL), as
	// the kubelet and shells show it.
	Code       int       `json:"code"`
	Signal     string    `json:"signal,omitempty"` // "KILL", without the SIG prefix
	Reason     string    `json:"reason"`           // Completed, Error, Signaled, OOMKilled, HookError …
	FinishedAt time.Time `json:"finished_at"`
}

// ProgramStatus is one program instance as status reports it.
type ProgramStatus struct {
	Name  string `json:"name"` // "web", or "web:1" for an instance
	State string `json:"state"`
	// Ready: running and its readiness check (if any) passed, as the
	// supervise_program_ready metric says. The supervisor always sets it.
	Ready         *bool      `json:"ready,omitempty"`
	Pid           int        `json:"pid"` // 0 when not running
	Restarts      int        `json:"restarts"`
	StartedAt     *time.Time `json:"started_at"`
	LastExit      *ExitInfo  `json:"last_exit"`
	NextStartInMs int64      `json:"next_start_in_ms,omitempty"` // while in crash backoff
	MemoryBytes   int64      `json:"memory_bytes"`
	CPUSeconds    float64    `json:"cpu_seconds"`
	Message       string     `json:"message,omitempty"`
	// Probes has the last result of each probe that ran in this run,
	// keyed "startup", "readiness", "liveness".
	Probes map[string]ProbeResult `json:"probes,omitempty"`
	// Schedule is a scheduled program's cron expression; NextRun and
	// NextRunInMs when its next run is due (absent while it is stopped);
	// LastRun how its last time went.
	Schedule    string     `json:"schedule,omitempty"`
	NextRun     *time.Time `json:"next_run,omitempty"`
	NextRunInMs int64      `json:"next_run_in_ms,omitempty"`
	LastRun     *RunInfo   `json:"last_run,omitempty"`
}

// RunInfo is a scheduled program's last time: its run's start and end, and
// "succeeded", "failed: …", "stopped" or "skipped: …" (a time skipped has
// no run: only FinishedAt, when it was skipped).
type RunInfo struct {
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Result     string    `json:"result"`
}

// ProbeResult is the outcome of one probe run.
type ProbeResult struct {
	OK      bool      `json:"ok"`
	Message string    `json:"message,omitempty"` // "HTTP 200", "exit code 1", "timed out after 1s"
	Time    time.Time `json:"time"`
}

// Why is how an instance last ended and where it stands now: what
// `supervisectl why` shows.
type Why struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Restarts int    `json:"restarts"`
	// BackoffMs is the crash backoff left before the next start (0 when
	// none is being waited out).
	BackoffMs int64 `json:"backoff_ms"`
	// LastRun is nil until a run has ended.
	LastRun *RunRecord `json:"last_run"`
}

// RunRecord is one ended run of an instance.
type RunRecord struct {
	// StartedAt is nil for a run that never started (a failed pre_start).
	StartedAt  *time.Time `json:"started_at"`
	EndedAt    time.Time  `json:"ended_at"`
	DurationMs int64      `json:"duration_ms"`
	// Status is the exit as a shell says it: the code, or 128+N for
	// signal N; -1 when the process never ran.
	Status  int    `json:"status"`
	Code    int    `json:"code"`
	Signal  string `json:"signal,omitempty"` // "KILL", without the SIG prefix
	Reason  string `json:"reason"`           // Completed, Error, Signaled, OOMKilled, LivenessProbeFailed, Stopped …
	Message string `json:"message,omitempty"`
	// PeakMemoryBytes is the highest memory use of the program's cgroup
	// (0 when not known: no cgroup, or a kernel without memory.peak).
	PeakMemoryBytes int64 `json:"peak_memory_bytes"`
	// Stdout and Stderr are the run's last lines on each stream, oldest
	// first; Truncated says lines were cut or left out to bound them.
	Stdout    []string `json:"stdout"`
	Stderr    []string `json:"stderr"`
	Truncated bool     `json:"truncated,omitempty"`
}

// Event is one state change of a program (or of the supervisor itself).
type Event struct {
	Time    time.Time `json:"time"`
	Program string    `json:"program"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Message string    `json:"message,omitempty"`
	// Run is set on the one event that records a run's end.
	Run *RunRecord `json:"run,omitempty"`
}

// Backend is what the server exposes; the supervisor implements it.
//
// names are passed through as the user typed them: "all" addresses every
// program, and an unknown name is an error wrapping [ErrUnknownProgram].
// ctx ends when the client goes away or the server stops; a method that
// waits (Restart until the new process runs) must return then.
type Backend interface {
	// Status reports the named programs, every program when names is empty.
	Status(ctx context.Context, names []string) ([]ProgramStatus, error)
	// Why reports how the named instances (every one when names is
	// empty) last ended.
	Why(ctx context.Context, names []string) ([]Why, error)
	// Start returns when the named programs are ready, or have failed,
	// unless opts.NoWait.
	Start(ctx context.Context, names []string, opts WaitOptions) error
	// Stop returns when the named programs are down.
	Stop(ctx context.Context, names []string, opts StopOptions) error
	// Restart also clears the programs' crash backoff; opts says how.
	Restart(ctx context.Context, names []string, opts RestartOptions) error
	Signal(ctx context.Context, sig syscall.Signal, names []string) error
	// Logs sends at most the last n lines of history (all of it when n < 0)
	// of the named programs (every program when names is empty). Without
	// follow the channel closes after the history; with follow it carries
	// new lines until ctx ends, and then closes. The backend must stop
	// sending and close the channel once ctx is done.
	Logs(ctx context.Context, names []string, n int, follow bool) (<-chan logs.Line, error)
	// Events is Logs for state changes: the recent history, then (with
	// follow) new events until ctx ends; the channel closes either way.
	Events(ctx context.Context, follow bool) (<-chan Event, error)
	// Scale sets how many instances each named program runs (by program
	// name, never an instance), until a reload changes its instances.
	Scale(ctx context.Context, counts map[string]int, opts WaitOptions) error
	Reload(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

// WaitOptions say whether a start or a scale waits for what it asked.
type WaitOptions struct {
	// NoWait returns once the command is under way. By default the call
	// returns when every instance started is ready (or has failed) and
	// every instance removed is gone.
	NoWait bool
	// Timeout bounds the wait for each instance; 0 means the program's
	// rollout timeout (two minutes unless set).
	Timeout time.Duration
}

// RestartOptions say how a restart goes.
type RestartOptions struct {
	// AllAtOnce restarts every instance of a program together, instead of
	// one at a time, each successor ready before the next instance goes.
	AllAtOnce bool
	// NoWait returns once the restart is under way; a rolling restart goes
	// on in the supervisor. By default the call returns when every
	// restarted instance is ready (or has failed).
	NoWait bool
	// Timeout bounds the wait for each successor to become ready; 0 means
	// the default of two minutes.
	Timeout time.Duration
	// WithDependents stops what depends on the programs first, deepest
	// first, and brings it back once they run again. By default a
	// dependent keeps running, as through a crash of its dependency.
	WithDependents bool
	// Resume names instances whose restart was asked for already, by a
	// command an upgrade in place ended, with the process each had then:
	// they are only waited for (a process other than that one, ready).
	Resume map[string]string
}

// StopOptions say how a stop goes.
type StopOptions struct {
	// WithDependents stops what depends on the programs first, deepest
	// first; it runs again when they are started. By default a dependent
	// keeps running, as through a crash of its dependency.
	WithDependents bool
}
