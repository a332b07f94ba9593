package metrics

import "time"

// Source is what the handler reads at every request.
type Source interface {
	// Snapshot returns the figures at this instant.
	Snapshot() Snapshot
	// Healthy reports an error when the supervisor's loop is stuck.
	Healthy() error
	// Runs returns the last ended run of each instance that has one, by
	// name (the web console's why record).
	Runs() map[string]Run
	// LogTail returns the last n lines of the instance name ("web",
	// "web:1"), oldest first; an error for a name it does not know.
	LogTail(name string, n int) ([]LogLine, error)
}

// Run is how an instance's last run ended, as `supervisectl why` says.
type Run struct {
	StartedAt       time.Time `json:"started_at"` // zero: it never started
	EndedAt         time.Time `json:"ended_at"`
	DurationMs      int64     `json:"duration_ms"`
	Status          int       `json:"status"` // the code, or 128+N for signal N
	Code            int       `json:"code"`
	Signal          string    `json:"signal,omitempty"`
	Reason          string    `json:"reason"`
	Message         string    `json:"message,omitempty"`
	PeakMemoryBytes int64     `json:"peak_memory_bytes"`
	Stdout          []string  `json:"stdout"`
	Stderr          []string  `json:"stderr"`
	Truncated       bool      `json:"truncated,omitempty"`
}

// LogLine is one line a program wrote.
type LogLine struct {
	Time   time.Time `json:"time"`
	Stream string    `json:"stream"`
	Text   string    `json:"text"`
}

// Snapshot is every figure served, at one instant.
type Snapshot struct {
	// States lists every state a program can be in, so that the state
	// gauge has a series (0 or 1) for each.
	States   []string
	Programs []Program
	// Empty names the programs that have no instance (scaled to 0): they
	// are known, and nothing of them is not ready.
	Empty []string
	Queue Queue
	// Reloads and ReloadFailures count config reloads applied and refused.
	Reloads, ReloadFailures uint64
	// IllegalTransitions counts state changes the lifecycle refused.
	IllegalTransitions uint64
}

// Program is one instance of a program.
type Program struct {
	// Name is what status calls it: "db" for a program of one instance,
	// "web:1" for an instance of a program of several.
	Name     string
	Program  string // the name in the config
	Instance string // "0" … "N-1", the metrics' instance label
	State    string
	// Ready: the run passed its readiness check (or has none and runs).
	Ready bool
	// Up: counts for /readyz: it is ready, or a one-shot that completed.
	Up        bool
	Autostart bool
	Restarts  int
	Pid       int // 0 when not running
	// StartedAt is the start of the current run; zero when none runs.
	StartedAt time.Time
	LastExit  *Exit // nil before the first exit
	// Stats: MemoryBytes and CPUSeconds were read from the cgroup.
	Stats       bool
	MemoryBytes int64
	CPUSeconds  float64
	OOMKills    int
	Probes      []Probe
	// Scheduled: a program run at the times of a schedule. LastSuccess is
	// the end of its last successful run, NextRun when the next is due;
	// zero when none (yet, or while it is stopped).
	Scheduled   bool
	LastSuccess time.Time
	NextRun     time.Time
}

// Exit is how an instance last ended.
type Exit struct {
	Code   int
	Reason string // Completed, Error, Signaled, OOMKilled …
}

// Probe is the last result of one probe of the current run.
type Probe struct {
	Kind     string // startup, readiness, liveness
	OK       bool
	Duration time.Duration
}

// Queue is the work queue's figures, under client-go's names.
type Queue struct {
	Name                string
	Depth               int
	Adds, Retries       uint64
	LongestRunning      time.Duration
	UnfinishedWork      time.Duration
	QueueTime, WorkTime Histogram
}

// Histogram is a latency histogram: Bounds are the buckets' upper bounds,
// Counts[i] the observations in bucket i (not cumulative), with one more
// count than bounds for those above the last.
type Histogram struct {
	Bounds []time.Duration
	Counts []uint64
	Count  uint64
	Sum    time.Duration
}
