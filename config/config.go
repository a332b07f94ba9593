package config

import (
	"slices"
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/internal/sockets"
)

// Defaults of the keys a file may leave out. The crash backoff ones are the
// kubelet's.
const (
	DefaultWorkers         = 2
	DefaultShutdownTimeout = 30 * time.Second
	DefaultStopTimeout     = 10 * time.Second
	DefaultExitTailLines   = 50
	MaxExitTailLines       = 1000
	DefaultMinStopGrace    = 2 * time.Second // the kubelet's minimum grace period
	DefaultStopSignal      = syscall.SIGTERM
	DefaultBackoffInitial  = 10 * time.Second
	DefaultBackoffMax      = 5 * time.Minute
	// DefaultBackoffResetAfter: a run this long forgives past crashes,
	// whatever max is, as the kubelet resets after 10 minutes.
	DefaultBackoffResetAfter = 10 * time.Minute
	DefaultHookTimeout       = 30 * time.Second
	DefaultLogMaxSize        = 10 << 20  // bytes
	DefaultLogRing           = 256 << 10 // bytes of recent lines kept per instance
	DefaultMaxConnections    = 256       // control connections open at once
	DefaultMaxFollowers      = 64        // `logs -f` and `events -f` streams at once
	DefaultLogMaxFiles       = 5
	DefaultLogFormat         = "text"
	DefaultLogLevel          = "info"
	DefaultWatchDebounce     = 200 * time.Millisecond
	DefaultRolloutTimeout    = 2 * time.Minute
)

// Config is one validated file. Nothing in it refers to TOML: every value is
// typed, defaulted and checked, and paths are absolute.
type Config struct {
	// File is the path as it was given to Load or Parse; errors name it.
	File string
	// Dir is the absolute directory of File; relative paths in the file
	// (dir, env_file, stdout.file, socket) were resolved against it.
	Dir string
	// Procfile is set when File was a Procfile (dev-runner defaults), or
	// a TOML file with a [procfile] table naming one.
	Procfile bool
	// Sources are the other files the config was read from (the Procfile
	// a [procfile] table names), for a reload to watch.
	Sources    []string
	Supervisor Supervisor
	// Programs in the order they first appear in the file (a Procfile's line
	// order), so status and console colours follow the file. Names are
	// unique.
	Programs []*Program
}

// Program returns the program called name, or nil.
func (c *Config) Program(name string) *Program {
	for _, p := range c.Programs {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Supervisor is the [supervisor] table.
type Supervisor struct {
	// Socket is the control socket path; "" means the caller's default
	// (under $XDG_RUNTIME_DIR, else /run).
	Socket string
	// SocketGroup, when set, is the group allowed to use the socket.
	SocketGroup string
	// Workers is the number of reconcile workers; at least 1.
	Workers int
	// ShutdownTimeout bounds a whole graceful shutdown.
	ShutdownTimeout time.Duration
	LogFormat       string // "text" or "json"
	LogLevel        string // "debug", "info", "warn" or "error"
	// ExitOn names programs whose end (for good: no restart coming) ends
	// the supervisor, which then exits with that program's status.
	ExitOn []string
	// WatchConfig reloads the config when its file changes (default
	// true); SIGHUP and `supervisectl reload` reload either way.
	WatchConfig bool
	// StrictShutdown makes a shutdown that had to SIGKILL a program (at
	// its stop_timeout or the shutdown_timeout) exit ExitForcedShutdown.
	StrictShutdown bool
	// LogRing bounds the memory of each instance's recent lines, kept for
	// `supervisectl logs` (bytes).
	LogRing int
	// MaxConnections bounds the control connections open at once; more
	// are answered "too many connections" and closed, so that clients
	// cannot take the descriptors that starting programs needs.
	MaxConnections int
	// MaxFollowers bounds the following streams (`logs -f`, `events -f`)
	// at once, below MaxConnections.
	MaxFollowers int
	// ProbeJitter (default true): a probe that starts within its first
	// period after the supervisor started waits a random fraction of that
	// period first, as the kubelet's probe workers do after the kubelet
	// starts, so that programs started together do not all probe at once.
	ProbeJitter bool
	// HTTP is the address (HOST:PORT) of the read-only HTTP listener for
	// /metrics, /healthz and /readyz; "" (the default) serves none.
	HTTP string
	// HTTPTokenFile, when set, names the file of the bearer token that
	// opens the control verbs under /v1/ on the HTTP listener (checked
	// by ReadTokenFile); without it the listener is read-only.
	HTTPTokenFile string
	// Line of the [supervisor] table; 0 when the file has none.
	Line int
}

// RestartRule is one of restart_rules: an exit whose status (the code, or
// 128 + the signal, as a shell reports it) is In or NotIn Values takes
// Action, whatever the restart policy says.
type RestartRule struct {
	Action   string // RuleRestart
	Operator string // RuleIn or RuleNotIn
	Values   []int  // 0–255
}

// The actions and operators of restart rules, spelled as the kubelet's.
const (
	RuleRestart = "restart"
	RuleIn      = "In"
	RuleNotIn   = "NotIn"
)

// Match reports whether status matches the rule's exit codes.
func (r RestartRule) Match(status int) bool {
	return slices.Contains(r.Values, status) == (r.Operator == RuleIn)
}

// RestartPolicy says whether an exited program is started again.
type RestartPolicy string

const (
	RestartAlways    RestartPolicy = "always"
	RestartOnFailure RestartPolicy = "on-failure" // exit status not in SuccessExitCodes, or a signal
	RestartNever     RestartPolicy = "never"
)

// Program is one [program.NAME] table with [defaults] applied.
type Program struct {
	// Name is unique in the file: letters, digits, '_', '-', '.'; never ':',
	// which separates the instance number in keys ("web:2").
	Name string `reload:"new-process"`
	// Line of the program's table.
	Line int
	// Command is the argv; never empty. A string command was split like a
	// shell would (quotes, backslashes) without running one.
	Command []string `reload:"new-process"`
	// Dir is the absolute working directory (default: the file's directory).
	Dir string `reload:"new-process"`
	// Env is the program's environment on top of the supervisor's own: the
	// env_file entries in order, then env over them. ${VAR} and
	// ${VAR:-default} in env values were expanded from the supervisor's
	// environment at load time ($$ is a literal $); env_file values are
	// taken literally.
	Env map[string]string `reload:"new-process"`
	// EnvFiles are the absolute paths of env_file, already read into Env;
	// kept so a reload can tell which files to watch.
	EnvFiles []string
	User     string   `reload:"new-process"` // name or numeric uid; "" = the supervisor's
	Group    string   `reload:"new-process"` // name or numeric gid; "" = the user's primary group
	Groups   []string `reload:"new-process"` // supplementary groups
	Restart  RestartPolicy
	// RestartRules are checked, in order, before Restart when the program
	// ends on its own: the first whose exit codes match the exit status
	// decides (the kubelet's container restart rules).
	RestartRules []RestartRule
	// SuccessExitCodes are the exit statuses that count as success for
	// RestartOnFailure and for Completed; default [0].
	SuccessExitCodes []int
	// Instances > 1 runs that many copies keyed "name:0" … "name:N-1"; the
	// supervisor expands them. At least 1.
	Instances int
	// Autostart false leaves the program stopped until asked.
	Autostart bool
	// Critical: when the program ends for good (no restart coming), the
	// supervisor stops everything and exits with its status, as if the
	// program were named in [supervisor] exit_on.
	Critical bool
	// Sidecar, as the kubelet's sidecar containers: the programs that
	// depend on it wait for it to be started (running, its startup probe
	// passed), not ready; it does not keep the supervisor running once
	// every other program has ended for good, and it is stopped after the
	// programs that depend on it.
	Sidecar bool
	// DependsOn names programs (never instances) started before this one and
	// stopped after it. Every name exists and there is no cycle.
	DependsOn   []string
	StopSignal  syscall.Signal
	StopTimeout time.Duration
	// ExitTailLines is how many of a run's last lines, per stream, are
	// kept with its end for `supervisectl why`; 0 means
	// DefaultExitTailLines.
	ExitTailLines int
	// MinStopGrace is the least time the stop signal gets before SIGKILL,
	// however much of StopTimeout pre_stop used (the kubelet's 2 s
	// minimum grace period). 0 lets pre_stop use it all.
	MinStopGrace time.Duration
	Backoff      Backoff
	Sandbox      Sandbox `reload:"new-process"`
	Hooks        Hooks
	Stdout       Output
	// Stderr is where the program's stderr goes; the zero Output when
	// StderrToStdout.
	Stderr Output
	// StderrToStdout (stderr = "stdout"): the process's descriptor 2 is
	// its stdout pipe, so both streams are one, in the order written,
	// going where Stdout goes, and the supervisor holds one pipe for it.
	StderrToStdout bool `reload:"new-process"`
	// Watch, when set, restarts the program (or sends it Watch.Signal)
	// when files it watches change; nil watches nothing. It never needs a
	// new process by itself: a reload that only changes it keeps the pid.
	Watch *Watch
	// Rollout is how a restart of several instances replaces them.
	Rollout Rollout
	// Port is the PORT of instance 0 in Procfile mode (instance i gets
	// Port+i, as foreman does); 0 elsewhere. Env["PORT"] holds it too.
	Port int `reload:"new-process"`

	// Listen are the sockets supervise binds for the program and holds
	// across its restarts (socket activation): every process gets them at
	// descriptors 3, 4, … with LISTEN_FDS, LISTEN_PID and LISTEN_FDNAMES.
	Listen []sockets.Spec `reload:"new-process"`

	// Health (see health.go). DependsOnCond is what the table form of
	// depends_on asks of each dependency: DependReady, DependRunning or
	// DependCompleted; nil for the array form. Read it through
	// DependsOnCondition, whose default is DependReady.
	DependsOnCond map[string]string
	// BoundTo names the dependencies this program is stopped and restarted
	// with (restart_with = true in the table form): a restart or stop of
	// the dependency as a whole, or its end for good, takes this program
	// down first. Read it through RestartWith.
	BoundTo map[string]bool
	// Probes are the kubelet's three probes.
	Probes Probes
	// Notify is how the program says it is ready: NotifyNone, NotifySdNotify
	// (it gets NOTIFY_SOCKET) or NotifyFD (it writes a newline on the
	// descriptor numbered by the NotifyFD field).
	Notify string `reload:"new-process"`
	// NotifyFD is the descriptor number of the notification pipe with
	// notify = "fd" (default 3); 0 otherwise.
	NotifyFD int `reload:"new-process"`
	// Watchdog, with NotifySdNotify, is how long the program may go without
	// sending WATCHDOG=1 before it is restarted; 0 = no watchdog.
	Watchdog time.Duration `reload:"new-process"`
	// ReadyLogLine is a regular expression (Go syntax, checked): the
	// program is ready once a line of its output matches; "" = none.
	ReadyLogLine string
	// Schedule, when set, runs the program as a job at each of its times.
	Schedule Schedule
}

// Rollout is a program's [program.NAME.rollout] table: how a restart, a
// reload that needs new processes, or a file-change restart replaces the
// instances of a program that has several, after Kubernetes' rolling
// update. The zero value is the default: one at a time, 2m each.
type Rollout struct {
	// MaxUnavailable is how many instances are replaced at once; each
	// batch's successors must be ready before the next batch goes. 0
	// means the default, 1.
	MaxUnavailable int
	// Percent, when set, gives MaxUnavailable as a percentage of the
	// instances ("25%", rounded down, at least 1; "100%" is all at once),
	// as Kubernetes' maxUnavailable.
	Percent int
	// Timeout bounds the wait for each successor to be ready (0: the
	// default, 2m): one that is not stops the rollout there, and the
	// instances not yet replaced keep their old processes.
	Timeout time.Duration
}

// Unavailable is how many of n instances a rollout replaces at once: at
// least 1, at most n.
func (r Rollout) Unavailable(n int) int {
	n = max(n, 1)
	switch {
	case r.Percent > 0:
		return max(n*r.Percent/100, 1)
	case r.MaxUnavailable > 0:
		return min(r.MaxUnavailable, n)
	}
	return 1
}

// WaitTimeout is Timeout, or the default.
func (r Rollout) WaitTimeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultRolloutTimeout
}

// Watch is a program's [program.NAME.watch] table: the files whose change
// restarts it, as in a dev loop.
type Watch struct {
	// Paths are absolute directories (watched recursively, new
	// subdirectories included) and files. Relative ones in the file
	// resolve against its directory; default: the program's Dir.
	Paths []string
	// Include, when not empty, keeps only the changes matching one of
	// these globs; Exclude drops the matching ones (and editor temp files
	// and .git always). Globs are relative to each watched directory, with
	// "**" spanning directories; a pattern without '/' matches a name at
	// any depth, and a matched directory covers its subtree (package
	// watch/glob). Every one compiles.
	Include, Exclude []string
	// GitIgnore also leaves out what the .gitignore at the top of each
	// watched directory ignores (the dev runner's default).
	GitIgnore bool
	// Debounce is how long the files must stay quiet before a change
	// counts (default 200ms); 0 reacts to the next batch of events.
	Debounce time.Duration
	// Signal, when not 0, is sent to the program instead of restarting it
	// (for a server that reloads itself on HUP).
	Signal syscall.Signal
}

// Backoff is the kubelet crash backoff of one program: the waits before
// restarts go 0, Initial, 2×Initial … up to Max, and start over after a run
// longer than ResetAfter.
type Backoff struct {
	Initial    time.Duration // default 10s; 0 restarts at once every time
	Max        time.Duration // default 5m; never below Initial
	ResetAfter time.Duration // default 2×Max
}

// Sandbox is what a program runs in. The zero value asks for nothing: no
// namespaces, no limits, no cgroup needed.
type Sandbox struct {
	// Namespaces to create, each one of pid, mount, uts, ipc, net, user.
	Namespaces []string
	// Hostname inside the sandbox; set only with the uts namespace.
	Hostname  string
	MemoryMax int64   // bytes; 0 = no limit
	CPUMax    float64 // cores; 0 = no limit
	PidsMax   int64   // 0 = no limit; else at least 8
	// NoNewPrivileges sets PR_SET_NO_NEW_PRIVS before exec.
	NoNewPrivileges bool
	// Umask of the process; -1 = inherit the supervisor's.
	Umask int
	// Rlimits by name without the RLIMIT_ prefix, lower case: as, core,
	// cpu, data, fsize, locks, memlock, msgqueue, nice, nofile, nproc,
	// rss, rtprio, rttime, sigpending, stack.
	Rlimits map[string]Rlimit
}

// Unlimited is the Rlimit value "unlimited" (RLIM_INFINITY).
const Unlimited = ^uint64(0)

// Rlimit is a soft and hard resource limit; Soft <= Hard.
type Rlimit struct {
	Soft, Hard uint64
}

// Hooks are a program's lifecycle hooks; nil means none.
type Hooks struct {
	PreStart, PostStart, PreStop, PostStop *Hook
}

// Hook is a command (run inside the program's sandbox, as its user, in its
// directory and environment), an HTTP request, or a sleep: exactly one of
// Command, HTTP and Sleep is set.
type Hook struct {
	Command []string
	HTTP    *HTTPHook
	// Sleep waits, running nothing: the kubelet's sleep action, the
	// usual pre_stop of a program behind a load balancer (it keeps
	// serving while the balancer notices it is going). Not longer than
	// Timeout.
	Sleep   time.Duration
	Timeout time.Duration // default 30s
}

// HTTPHook is a hook that is an HTTP request.
type HTTPHook struct {
	URL     string // absolute http:// or https:// URL
	Method  string // default GET
	Headers map[string]string
	// ExpectStatus, when not 0, is the only status that counts as success;
	// otherwise any reply does, as for the kubelet's handlers.
	ExpectStatus int
}

// Output is where one of a program's streams goes, line by line.
type Output struct {
	// Console copies lines to the supervisor's stdout as "name | line".
	// Default true.
	Console bool
	// File is an absolute path to append lines to; "" = no file.
	File string
	// MaxSize rotates File when it would grow past this many bytes
	// (default 10MiB); MaxFiles is how many files rotation keeps (default 5).
	MaxSize  int64
	MaxFiles int
	// Timestamps prefixes each line in File with the time it was read
	// (RFC 3339 in UTC, nanoseconds). Default false: the file holds the
	// program's bytes as they came, as supervisord and s6-log write them.
	Timestamps bool
}
