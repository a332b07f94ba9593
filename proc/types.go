package proc

import (
	"io"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// Options configure a Runtime. The zero value is usable.
type Options struct {
	// CgroupRoot is the path of our cgroup subtree relative to the cgroup
	// mount ("" = the cgroups package default: a supervise subtree of our
	// own cgroup).
	CgroupRoot string
	// CgroupFS is where the cgroup hierarchies are mounted ("" = /sys/fs/cgroup).
	CgroupFS string
	// CgroupMode forces "v1", "v2" or "none"; "" detects. (Tests use "v2"
	// to place children in the controller-less cgroup2 of a hybrid host.)
	CgroupMode string
	// InitPath is the binary re-executed as the sandbox init; it must
	// dispatch on IsInit first thing in main ("" = /proc/self/exe).
	InitPath string
	// Logger gets the runtime's own logs; nil discards them.
	Logger *slog.Logger
	// NoSubreaper keeps the runtime from setting PR_SET_CHILD_SUBREAPER
	// (which it does when it is not PID 1), so orphans of our programs go
	// to the system's init instead of being reaped here.
	NoSubreaper bool
	// LimitsBestEffort runs a sandbox that asks for limits without them
	// (saying so once) when this user may not create cgroups, instead of
	// failing its start: a developer's run of a project, where the limits
	// are for production.
	LimitsBestEffort bool
	// Adopt takes over the sandboxes and processes of a runtime frozen
	// in this process before an execve of a new binary (Runtime.Freeze):
	// they are validated, registered with the reaper before its first
	// wait, and their unhandled exits reported on Events.
	Adopt *Snapshot
	// Spawner says when programs without namespaces are forked through
	// the spawner, a small re-executed helper whose fork does not copy
	// our descriptor table (SpawnerAuto: once we hold many descriptors).
	Spawner SpawnerMode
	// AdoptFiles are the inherited descriptors Adopt names by number (the
	// control sockets of sandbox inits); New takes those it uses out of
	// the map and owns them.
	AdoptFiles map[int]*os.File
}

// SpawnerMode says when programs are forked through the spawner.
type SpawnerMode string

const (
	// SpawnerAuto forks through the spawner once a start passed a
	// descriptor numbered above 4096 (many programs: two pipe ends each).
	SpawnerAuto SpawnerMode = ""
	// SpawnerAlways forks every program without namespaces through it.
	SpawnerAlways SpawnerMode = "always"
	// SpawnerNever forks every program from the runtime itself.
	SpawnerNever SpawnerMode = "never"
)

// Namespace names a Linux namespace a sandbox can have.
type Namespace string

const (
	NamespacePID   Namespace = "pid"
	NamespaceMount Namespace = "mount"
	NamespaceUTS   Namespace = "uts"
	NamespaceIPC   Namespace = "ipc"
	NamespaceNet   Namespace = "net"
	NamespaceUser  Namespace = "user"
)

// IDMap maps Size ids from ContainerID inside a user namespace to HostID
// outside.
type IDMap struct {
	ContainerID, HostID, Size int
}

// DefaultUserNSHostID is where uid/gid 0 of a user namespace maps to when
// the sandbox gives no mappings and the runtime runs as root: 65536 ids
// from 100000, an unprivileged range, as podman and docker's userns-remap use.
const DefaultUserNSHostID = 100000

// SandboxConfig describes a sandbox: a cgroup with limits and namespaces.
type SandboxConfig struct {
	// Name is used in ids and the cgroup directory name.
	Name       string
	Namespaces []Namespace
	// Hostname inside the sandbox; needs the uts namespace.
	Hostname  string
	MemoryMax int64   // bytes; 0 = no limit
	CPUMax    float64 // cores; 0 = no limit
	PidsMax   int64   // 0 = no limit
	// UIDMappings and GIDMappings apply with the user namespace; nil maps
	// 0 to DefaultUserNSHostID (65536 ids) as root, to our own id as non-root.
	UIDMappings, GIDMappings []IDMap
	// NoCgroup runs the sandbox without a cgroup even when cgroups are
	// usable. Asking for a limit as well is an error. Without a cgroup,
	// DeleteSandbox can only kill process groups: a program that setsids
	// away survives it.
	NoCgroup bool
}

func (c SandboxConfig) hasLimits() bool {
	return c.MemoryMax > 0 || c.CPUMax > 0 || c.PidsMax > 0
}

func (c SandboxConfig) has(ns Namespace) bool {
	for _, n := range c.Namespaces {
		if n == ns {
			return true
		}
	}
	return false
}

// SandboxState is the state of a sandbox.
type SandboxState string

const (
	SandboxReady    SandboxState = "Ready"
	SandboxNotReady SandboxState = "NotReady" // its init died; only DeleteSandbox helps
)

// SandboxStatus describes a sandbox.
type SandboxStatus struct {
	ID        string
	Name      string
	State     SandboxState
	CreatedAt time.Time
	// CgroupPath is the sandbox's cgroup ("" without one).
	CgroupPath string
	// InitPid is the host pid of the sandbox init (0 when the sandbox has
	// no namespaces and programs are forked by the runtime directly).
	InitPid   int
	Processes []string
}

// Stats are a sandbox's resource usage, read from its cgroup.
type Stats struct {
	MemoryBytes int64
	// MemoryPeak is the highest MemoryBytes the cgroup reached (Stats
	// only, not Usage; 0 when the kernel does not say).
	MemoryPeak int64
	CPUUsage   time.Duration
	Pids       int64
	OOMKills   uint64
}

// Rlimit is a resource limit set before the program starts. Name is the
// resource without the RLIMIT_ prefix, any case ("nofile", "NOFILE",
// "RLIMIT_NOFILE" all work). ^uint64(0) is unlimited.
type Rlimit struct {
	Name       string
	Soft, Hard uint64
}

// ProcessConfig describes a program to run in a sandbox.
type ProcessConfig struct {
	// Args[0] is looked up in the PATH of Env (or the default PATH).
	Args []string
	Dir  string
	Env  []string
	// User and Group by name or number; "" keeps ours (root). With a User
	// and no Groups, the user's groups from /etc/group apply.
	User, Group string
	Groups      []string
	Rlimits     []Rlimit
	// NoNewPrivileges sets PR_SET_NO_NEW_PRIVS before exec.
	NoNewPrivileges bool
	// Umask of the program; -1 inherits ours. Beware the zero value: 0
	// sets umask 0. Rlimits, NoNewPrivileges and a umask are applied by
	// the re-executed stub just before exec, which costs a Go start-up
	// (a few ms).
	Umask int
	// Stdout and Stderr receive the program's output; nil is /dev/null.
	// The caller owns them and may close them once Start returned.
	Stdout, Stderr *os.File
	// StopSignal is what Stop sends first (default SIGTERM).
	StopSignal syscall.Signal
	// ExtraFiles are passed to the program at the given descriptor numbers
	// (3 and up), e.g. an s6-style notification fd. The caller owns them
	// and may close them once Start returned.
	ExtraFiles map[int]*os.File
	// ListenPID sets LISTEN_PID to the program's own pid (socket
	// activation: sd_listen_fds(3) takes the sockets only when it names
	// the reader). Only the child knows its pid, so the program is started
	// through the exec stub, which sets it between fork and exec.
	ListenPID bool
}

// State is the state of a process.
type State string

const (
	StateCreated State = "Created"
	StateRunning State = "Running"
	StateExited  State = "Exited"
)

// Reason says why a process exited.
type Reason string

const (
	ReasonCompleted Reason = "Completed" // exit code 0
	ReasonError     Reason = "Error"     // non-zero exit code
	ReasonSignaled  Reason = "Signaled"  // killed by a signal
	ReasonOOMKilled Reason = "OOMKilled" // the sandbox's cgroup had an OOM kill during the run
)

// ProcessStatus describes a process.
type ProcessStatus struct {
	ID, SandboxID string
	State         State
	// Pid is the host pid of the program (0 before Start, and when it
	// could not be learnt from a sandbox init).
	Pid                   int
	StartedAt, FinishedAt time.Time
	ExitCode              int
	Signal                syscall.Signal
	Reason                Reason
}

// ListFilter selects processes for List; zero fields match everything.
type ListFilter struct {
	SandboxID string
	State     State
}

// ExecConfig is a short command run inside a sandbox (the hooks use it).
type ExecConfig struct {
	Args []string
	Env  []string
	Dir  string
	// User and Group as in ProcessConfig; "" keeps ours.
	User, Group string
	// Stdout and Stderr receive the output; nil discards it.
	Stdout, Stderr io.Writer
}

// ExecResult is how an Exec command ended.
type ExecResult struct {
	ExitCode int // -1 when killed by a signal
	Signal   syscall.Signal
	// TimedOut: the context's deadline passed and the command was killed.
	TimedOut bool
}

// Swept is one cgroup of a dead supervisor that the start's sweep
// removed, with the processes it killed there.
type Swept struct {
	Program string // the sandbox's name: the program instance it ran
	Cgroup  string
	Owner   string // the dead supervisor's tag
	Killed  int
}

// ExitEvent reports that a started process exited.
type ExitEvent struct {
	ID, SandboxID         string
	Pid                   int
	ExitCode              int // -1 when killed by a signal
	Signal                syscall.Signal
	Reason                Reason
	StartedAt, FinishedAt time.Time
}
