package proc

import (
	"os"
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

	files []*os.File // the descriptors the snapshot names, to pass on
}

// Files are the descriptors the snapshot names (the sandbox inits'
// control sockets): the caller passes them across the exec, and the new
// binary gives them back in Options.AdoptFiles.
func (s *Snapshot) Files() []*os.File { return s.files }

// SandboxSnapshot is one sandbox and its processes.
type SandboxSnapshot struct {
	ID        string            `json:"id"`
	Config    SandboxConfig     `json:"config"`
	CreatedAt time.Time         `json:"created_at"`
	Cgroup    bool              `json:"cgroup"` // it has a cgroup, named ID under our subtree
	Place     int32             `json:"place"`
	Init      *InitSnapshot     `json:"init,omitempty"` // its sandbox init, when it has one
	Processes []ProcessSnapshot `json:"processes"`
}

// InitSnapshot is a sandbox init: our child, which the sandbox's
// programs are children of, and our end of its control socket.
type InitSnapshot struct {
	Pid   int  `json:"pid"`
	PidNS bool `json:"pid_ns"` // PID 1 of the sandbox's pid namespace
	// FD is our end of its control socket, inherited; -1 when the init
	// is gone (its socket closed), and Reaped when its exit was collected.
	FD     int    `json:"fd"`
	Reaped bool   `json:"reaped,omitempty"`
	Seq    uint64 `json:"seq"` // the last request number used on the socket
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
	Child      uint64         `json:"child,omitempty"` // its key at the sandbox init
	Exit       *ExitEvent     `json:"exit,omitempty"`
}
