package proc

import "errors"

// Sentinel errors callers branch on; every error the Runtime returns wraps
// one of these or names what was being done.
var (
	// ErrNotFound: no sandbox or process has that id (or it was removed).
	ErrNotFound = errors.New("not found")
	// ErrInvalidState: the call is not a valid transition from the current
	// state (Start of a Running process, Remove of a Running one …).
	ErrInvalidState = errors.New("invalid state")
	// ErrSandboxGone: the sandbox is being deleted or its init has died.
	ErrSandboxGone = errors.New("sandbox is gone")
	// ErrNoCgroup: the sandbox has no cgroup (cgroups unusable or not asked).
	ErrNoCgroup = errors.New("sandbox has no cgroup")
	// ErrCgroupsUnavailable: a limit was asked but no usable cgroup
	// hierarchy was found.
	ErrCgroupsUnavailable = errors.New("cgroups unavailable")
	// ErrClosed: the Runtime has been closed.
	ErrClosed = errors.New("runtime closed")
	// ErrProcessDone: the process has already exited.
	ErrProcessDone = errors.New("process already finished")
)
