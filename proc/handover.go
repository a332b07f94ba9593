package proc

import (
	"syscall"
	"time"
)

// Snapshot is a frozen runtime, as the new binary adopts it.
type Snapshot struct {
	// OwnerTag names this supervisor run in sandbox ids and cgroup names;
	// the new binary keeps it, or its start-up sweep would judge our own
	// cgroups a dead supervisor's.
	OwnerTag  string            `json:"owner_tag"`
	Seq       uint64            `json:"seq"`
	Sandboxes []SandboxSnapshot `json:"sandboxes"`
}

// SandboxSnapshot is one sandbox and its processes.
type SandboxSnapshot struct {
	ID        string            `json:"id"`
	Config    SandboxConfig     `json:"config"`
	CreatedAt time.Time         `json:"created_at"`
	Cgroup    bool              `json:"cgroup"` // it has a cgroup, named ID under our subtree
	Place     int32             `json:"place"`
	Processes []ProcessSnapshot `json:"processes"`
}

// ProcessSnapshot is one process: running (its pid not reaped yet), or
// exited with an exit the supervisor has not handled (Exit set), which the
// new runtime reports again.
type ProcessSnapshot struct {
	ID         string         `json:"id"`
	Pid        int            `json:"pid"`
	StartedAt  time.Time      `json:"started_at"`
	StopSignal syscall.Signal `json:"stop_signal"`
	OOMBefore  uint64         `json:"oom_before"`
	Exit       *ExitEvent     `json:"exit,omitempty"`
}
