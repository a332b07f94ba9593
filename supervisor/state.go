package supervisor

import (
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/proc"
)

// State is what a user sees of a program instance.
type State string

const (
	Waiting          State = "Waiting"  // autostart, but a dependency is not up yet
	Starting         State = "Starting" // sandbox, pre_start, exec, post_start
	Running          State = "Running"
	Stopping         State = "Stopping" // pre_stop, stop signal, grace
	Stopped          State = "Stopped"  // stopped on request, or not autostarted
	Exited           State = "Exited"   // just exited; the restart policy decides next
	Completed        State = "Completed"
	CrashLoopBackOff State = "CrashLoopBackOff"
	Failed           State = "Failed"
)

// allStates lists every state in lifecycle order (the docs' table's, and
// the metrics' state series).
var allStates = []State{Stopped, Waiting, Starting, Running, Stopping, Exited, CrashLoopBackOff, Completed, Failed}

// transitions is the lifecycle: the states an instance may move to from
// each state. A move to the same state (a new message) is always allowed;
// any other move is refused and reported (see setStateLocked).
// docs/ARCHITECTURE.md shows this table; a test keeps the two in step.
var transitions = map[State][]State{
	Stopped:          {Starting, Waiting},
	Waiting:          {Starting, Stopped},
	Starting:         {Running, Stopping, Exited, Stopped},
	Running:          {Stopping, Exited},
	Stopping:         {Exited},
	Exited:           {Starting, Waiting, CrashLoopBackOff, Completed, Failed, Stopped},
	CrashLoopBackOff: {Starting, Waiting, Stopped},
	Completed:        {Starting, Waiting, Stopped},
	Failed:           {Starting, Waiting, Stopped},
}

// why says, for the table in the docs, what makes each move.
var why = map[[2]State]string{
	{Stopped, Starting}:          "start (autostart, a command, a dependent brought back)",
	{Stopped, Waiting}:           "start, while a dependency is not there",
	{Waiting, Starting}:          "the dependencies are there",
	{Waiting, Stopped}:           "stop",
	{Starting, Running}:          "started, post_start passed",
	{Starting, Stopping}:         "post_start failed: its process is stopped (HookError)",
	{Starting, Exited}:           "the start failed (StartError, HookError) or the process ended at once",
	{Starting, Stopped}:          "a stop came during the start sequence",
	{Running, Stopping}:          "stop, restart, a failed liveness probe or watchdog, shutdown",
	{Running, Exited}:            "the process ended by itself",
	{Stopping, Exited}:           "the process ended (on the stop signal, or SIGKILL after the grace)",
	{Exited, Starting}:           "restart at once (first crash, a requested restart)",
	{Exited, Waiting}:            "restart, while a dependency is not there",
	{Exited, CrashLoopBackOff}:   "restart after the crash backoff",
	{Exited, Completed}:          "ended successfully; the policy says stay down",
	{Exited, Failed}:             "ended in failure; the policy says stay down",
	{Exited, Stopped}:            "the exit of a stop",
	{CrashLoopBackOff, Starting}: "the backoff is over, or a restart",
	{CrashLoopBackOff, Waiting}:  "the backoff is over, a dependency is not there",
	{CrashLoopBackOff, Stopped}:  "stop",
	{Completed, Starting}:        "start, restart, reload",
	{Completed, Waiting}:         "start, while a dependency is not there",
	{Completed, Stopped}:         "stop, removal",
	{Failed, Starting}:           "start, restart, reload",
	{Failed, Waiting}:            "start, while a dependency is not there",
	{Failed, Stopped}:            "stop, removal",
}

// legal reports whether an instance may move from one state to another.
func legal(from, to State) bool {
	if from == to {
		return true
	}
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Reasons of exits that proc cannot report, because no process ran to its end.
const (
	ReasonHookError  = "HookError"
	ReasonStartError = "StartError"
)

// goal is the desired state of an instance: what the config and the user asked.
type goal int

const (
	goalRun    goal = iota // keep it running as its restart policy says
	goalStop               // stopped by the user or at shutdown
	goalRemove             // gone from the config: stop, clean up, forget
)

// exitInfo is the last exit of an instance.
type exitInfo struct {
	Code       int
	Signal     syscall.Signal
	Reason     string
	FinishedAt time.Time
	Message    string
}

// failed reports whether the exit is a failure under the program's
// success_exit_codes.
func (e *exitInfo) failed(spec *config.Program) bool {
	if e.Signal != 0 || e.Code < 0 || healthKill(e.Reason) {
		return true
	}
	codes := spec.SuccessExitCodes
	if len(codes) == 0 {
		codes = []int{0}
	}
	for _, c := range codes {
		if c == e.Code {
			return false
		}
	}
	return true
}

// status is the shell-like exit status: the code, or 128 + the signal.
func (e *exitInfo) status() int {
	if e.Signal != 0 {
		return 128 + int(e.Signal)
	}
	if e.Code < 0 || e.Code == 0 && healthKill(e.Reason) {
		return 1 // a failure, whatever the program said
	}
	return e.Code
}

// instance is one running copy of a program: "web", or "web:2".
//
// The work queue gives a key to one worker at a time, and that worker owns
// the instance's run while it holds the key. So the fields fall in three:
//   - desired: what commands and reloads ask, written by them under
//     Supervisor.mu; the worker reads them under the lock and uses the
//     asks up (takeAsksLocked). spec, logs and backoff are a reload's.
//   - published: the run as others see it (status, metrics, the other
//     instances' dependency checks, the exit watcher, waiters). Only the
//     worker writes them, always under the lock, so it reads its own
//     without the lock, and everyone else under it.
//   - run: the worker's alone, no lock at all.
type instance struct {
	key     string
	index   int
	spec    *config.Program
	backoff *backoff.Crash
	logs    programLogs
	// job: a scheduled program's timers, its due time (an ask) and its
	// last runs, all under Supervisor.mu (schedule.go); nil for a daemon.
	job *jobState

	// desired
	goal             goal
	restartRequested bool // a manual restart: stop if running, start at once
	// startAsked and waiveBackoff: see askStartLocked.
	startAsked   bool
	waiveBackoff bool
	// stoppedFor names the dependency whose stop (or end) stopped this
	// instance; it runs again once that program runs. "" otherwise.
	stoppedFor string
	// pendingExit is proc's report of the run's exit, handed over by the
	// exit watcher (under the lock) for the worker to handle.
	pendingExit *exitEvent
	// stopSignalled is the process the stop signal went to, set by
	// whoever sends it, the worker's stop or the shutdown's
	// (claimStopSignalLocked): a process gets it once, and its exit is
	// one that was asked for.
	stopSignalled string

	// published
	state      State
	message    string
	procID     string
	startingID string // the process being started, until procID is set
	pid        int
	startedAt  time.Time
	sandboxID  string
	health     *health // watchers of the current run; nil when none runs
	ready      bool    // the current run passed its readiness check
	lastExit   *exitInfo
	afterExit  bool // the last run ended by itself: decideRun judges that exit
	settled    bool // ended for good (Completed, Failed): see endedLocked
	restarts   int
	oomKills   int // runs ended by the OOM killer
	nextStart  time.Time

	// procSpec is the spec the running process was started with: a
	// reload's rollout replaces spec before it replaces the process.
	procSpec *config.Program

	run runState
}

// runState is the worker's alone.
type runState struct {
	// sandboxCfg is what sandboxID was created with: a kept sandbox is
	// reused only for a spec that asks for the same.
	sandboxCfg proc.SandboxConfig
	// stopDeadline is when a stop in progress escalates to SIGKILL; zero
	// when no stop is in progress.
	stopDeadline time.Time
}

// endedLocked reports whether in ended for good and nothing asks it to run
// again (the worker has not taken a start asked for yet).
func endedLocked(in *instance) bool {
	return in.settled && !in.startAsked && !in.restartRequested
}

type exitEvent struct {
	procID string
	exit   exitInfo
}
