package supervisor

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/supervise-dev/supervise/config"
)

// A job's schedule across an upgrade in place: the time its timer waits
// for (and its jitter), a time come but not yet run, its run's
// max_runtime and its last run cross, so the new binary neither skips
// nor doubles a time, and status says the same of it. A run beside the
// job's instance (concurrency = "allow") crosses as the run it is, with
// the spec it started with.

// JobHandover is a job's part of an InstanceHandover.
type JobHandover struct {
	Slot     time.Time `json:"slot"` // the time the timer waits for; zero: none comes
	At       time.Time `json:"at"`   // when its run is due: Slot plus the jitter
	Due      bool      `json:"due,omitempty"`
	DueSlot  time.Time `json:"due_slot"`
	Overran  bool      `json:"overran,omitempty"`
	RunStart time.Time `json:"run_start"` // when the run under way began: max_runtime counts from it

	LastStart   time.Time `json:"last_start"`
	LastEnd     time.Time `json:"last_end"`
	LastResult  string    `json:"last_result,omitempty"`
	LastSuccess time.Time `json:"last_success"`

	// First is, for a run beside a job's instance, that instance's key,
	// and Spec the spec the run started with.
	First string          `json:"first,omitempty"`
	Spec  *config.Program `json:"spec,omitempty"`
}

const maxJobResult = 4 << 10

// jobHandoverLocked is in's job state, nil for a daemon.
func jobHandoverLocked(in *instance) *JobHandover {
	j := in.job
	if j == nil {
		return nil
	}
	jh := &JobHandover{Slot: j.slot, At: j.at, Due: j.due, DueSlot: j.dueSlot, Overran: j.overran, RunStart: j.runStart,
		LastStart: j.lastStart, LastEnd: j.lastEnd, LastResult: j.lastResult, LastSuccess: j.lastSuccess}
	if j.first != nil {
		jh.First, jh.Spec = j.first.key, in.spec
	}
	return jh
}

// adoptBesideLocked puts back the runs beside a job's instance that h
// names, before the hand-over's instances are checked: they are not in
// the config, their job's instance is.
func (s *Supervisor) adoptBesideLocked(h *Handover) error {
	for _, ih := range h.Instances {
		jh := ih.Job
		if jh == nil || jh.First == "" {
			continue
		}
		first := s.instances[jh.First]
		n, err := strconv.Atoi(strings.TrimPrefix(ih.Key, jh.First+"#"))
		switch {
		case first == nil || first.job == nil || first.job.first != nil:
			return fmt.Errorf("run %s: %s is not a job's instance", ih.Key, jh.First)
		case err != nil || n < 1 || n >= maxConcurrentRuns || ih.Key != jh.First+"#"+strconv.Itoa(n):
			return fmt.Errorf("run %s: not a run of %s", ih.Key, jh.First)
		case s.instances[ih.Key] != nil:
			return fmt.Errorf("run %s: named twice", ih.Key)
		case jh.Spec == nil || jh.Spec.Name != first.spec.Name || len(jh.Spec.Command) == 0 || !jh.Spec.Scheduled():
			return fmt.Errorf("run %s: its spec is not one of %s", ih.Key, first.spec.Name)
		}
		spec := jh.Spec
		s.addInstanceLocked(&instance{
			key:     ih.Key,
			spec:    spec,
			index:   first.index,
			state:   Stopped,
			backoff: newCrashBackoff(spec, s.clock),
			logs:    s.logs.forRun(spec, ih.Key, first.logs),
			goal:    goalRun,
			job:     &jobState{cfg: spec.Schedule, first: first},
		})
	}
	return nil
}

// checkJobHandover checks what a job's state says, before anything is
// taken over.
func checkJobHandover(ih *InstanceHandover) error {
	if jh := ih.Job; jh != nil && len(jh.LastResult) > maxJobResult {
		return fmt.Errorf("instance %s: its last run's result is %d bytes", ih.Key, len(jh.LastResult))
	}
	return nil
}

// adoptJobLocked gives in's job its state back: the timer waits for the
// time the old binary's waited for (one come during the exec fires at
// once), a time come but not yet run is run, the run under way keeps
// its max_runtime from its start, and the last run is as it was.
func (s *Supervisor) adoptJobLocked(in *instance, jh *JobHandover) {
	j := in.job
	if j == nil || jh == nil {
		return
	}
	j.lastStart, j.lastEnd, j.lastResult, j.lastSuccess = jh.LastStart, jh.LastEnd, jh.LastResult, jh.LastSuccess
	j.due, j.dueSlot, j.overran, j.runStart = jh.Due, jh.DueSlot, jh.Overran, jh.RunStart
	if j.first == nil {
		j.stop()
		j.slot, j.at = jh.Slot, jh.At
		if !j.slot.IsZero() {
			s.waitLocked(in)
		}
	}
	if d := j.cfg.MaxRuntime; d > 0 && in.procID != "" && !j.overran && !j.runStart.IsZero() {
		j.runSeq++
		seq := j.runSeq
		left := max(j.runStart.Add(d).Sub(s.clock.Now()), 0)
		j.runTimer = s.clock.AfterFunc(left, func() { s.maxRuntimeReached(in, seq) })
	}
}
