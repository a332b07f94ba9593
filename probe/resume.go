package probe

import (
	"fmt"
	"maps"
	"time"
)

// A run's probes can move to another Runner without losing count: an
// upgrade in place carries each run's State across the exec, and the new
// binary's Runner resumes from it (Config.Resume). A probe two failures
// into a failure_threshold of three fails the run at the next one, and a
// ready run stays ready, as if nothing had happened.

// State is where a Runner's probes stand.
type State struct {
	// Started, StartedAt (when the startup probe passed), Ready (the
	// readiness probe's own verdict) and the failure, as Status says.
	Started        bool      `json:"started"`
	StartedAt      time.Time `json:"started_at"`
	Ready          bool      `json:"ready"`
	LivenessFailed bool      `json:"liveness_failed,omitempty"`
	Failure        string    `json:"failure,omitempty"`
	FailedProbe    string    `json:"failed_probe,omitempty"`
	// Last is each probe's last result; Counts each probe's count.
	Last   map[string]Result `json:"last,omitempty"`
	Counts map[string]Count  `json:"counts,omitempty"`
}

// Count is one probe's count toward its thresholds, and its next time.
type Count struct {
	OK  bool      `json:"ok"`  // the result counted last
	Run int       `json:"run"` // how many of it in a row (0: none yet)
	Due time.Time `json:"due"` // when it runs next
}

// Bounds of a State, which comes from another binary.
const (
	maxRun          = 1 << 20
	maxStateMessage = 4 << 10 // a message is cut to maxMessage; room for what wraps it
)

// Check refuses a State no Runner could have written: an unknown kind, a
// negative or huge count, an oversized message.
func (st *State) Check() error {
	known := func(kind string) bool { return kind == Startup || kind == Readiness || kind == Liveness }
	for kind, c := range st.Counts {
		if !known(kind) || c.Run < 0 || c.Run > maxRun {
			return fmt.Errorf("probe count %q: %d", kind, c.Run)
		}
	}
	for kind, r := range st.Last {
		if !known(kind) || len(r.Message) > maxStateMessage || len(r.Warning) > maxStateMessage {
			return fmt.Errorf("last %q probe result out of bounds", kind)
		}
	}
	if len(st.Failure) > maxStateMessage || st.FailedProbe != "" && !known(st.FailedProbe) {
		return fmt.Errorf("probe failure out of bounds")
	}
	return nil
}

// State is where the probes stand now: the results recorded so far (one
// under way when it is taken is not counted, and runs again on resume).
func (r *Runner) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return State{
		Started: r.st.Started, StartedAt: r.startedAt, Ready: r.ready,
		LivenessFailed: r.st.LivenessFailed, Failure: r.st.Failure, FailedProbe: r.st.FailedProbe,
		Last: maps.Clone(r.st.Last), Counts: maps.Clone(r.counts),
	}
}

// resumeLocked starts r where st left off (Start, before any worker).
func (r *Runner) resumeLocked(st *State) {
	for kind, res := range st.Last {
		if r.spec(kind) != nil {
			r.st.Last[kind] = res
		}
	}
	for kind, c := range st.Counts {
		if r.spec(kind) != nil {
			r.counts[kind] = c
		}
	}
	if st.Started && !r.st.Started {
		r.st.Started, r.startedAt = true, st.StartedAt
		close(r.started)
	}
	r.ready = st.Ready && r.cfg.Readiness != nil
	if st.LivenessFailed {
		r.st.LivenessFailed, r.st.Failure, r.st.FailedProbe = true, st.Failure, st.FailedProbe
	}
	r.st.Ready = r.st.Started && !r.st.LivenessFailed && (r.cfg.Readiness == nil || r.ready)
}

// spec is the Spec of kind, nil when there is no such probe.
func (r *Runner) spec(kind string) *Spec {
	switch kind {
	case Startup:
		return r.cfg.Startup
	case Readiness:
		return r.cfg.Readiness
	case Liveness:
		return r.cfg.Liveness
	}
	return nil
}

// resumed is where kind's worker starts: its count and next time from
// the state resumed, else none and due. A resumed time never lies further
// ahead than one period past due (a clock that stepped back meanwhile).
func (r *Runner) resumed(kind string, s Spec, due time.Time) (last bool, run int, next time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.counts[kind]
	if !ok {
		return false, 0, due
	}
	next = due
	if !c.Due.IsZero() {
		next = c.Due
		from := r.clock.Now()
		if due.After(from) {
			from = due
		}
		if limit := from.Add(s.Period); next.After(limit) {
			next = limit
		}
	}
	return c.OK, c.Run, next
}

// count records where kind's worker stands: its count and next time.
func (r *Runner) count(kind string, last bool, run int, due time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[kind] = Count{OK: last, Run: run, Due: due}
}
