package supervisor

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/supervise-dev/supervise/clock"
	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/metrics"
)

// Scheduled programs (jobs). A job's instance is meant to run (goal run)
// but is not started between its times: a timer per job, owned by the
// supervisor and run on its clock, marks a time due and asks a start, as a
// command does (askStartLocked), and queues the key; decideRun starts a
// run only then (or for a retry of a failed run, or when asked). A run
// ends as any other: past max_runtime it is a health kill (ReasonMaxRuntime,
// which restartWanted never retries), and its exit is settled through
// decideRun's stepSettle, where settleLocked leaves exit_on and the exit
// status alone for a job. The core calls in at a few hooks: applyLocked
// (arm, re-arm, disarm), shutdownAll (disarm), runViewLocked and
// reconcileRun's start (the run's facts), checkHealthLocked (max_runtime),
// recordExit (its result, written down), settleLocked, statusLocked,
// Snapshot, Start and checkDoneLocked.
//
// concurrency = "allow" (Kubernetes CronJob's Allow): a time that comes
// while the job's instance still runs starts a run beside it, as an
// instance of its own keyed "job#N" (N the lowest number free, from 1), as
// Kubernetes makes a Job per time. Such a run has its own sandbox (cgroup
// and limits), process, backoff and max_runtime, its lines are tagged with
// its key and kept in the job's ring (so `logs job` still has them once
// the run is gone), status and metrics show it, and every command on the
// job's name reaches it (stop stops every run). It has no timer: the
// schedule is its first instance's. Once its run ended for good (retries
// included) or was stopped, it is removed; a reload that keeps the job
// lets it run on with the spec it started with, one that removes the job
// (or makes it a daemon) stops it. The first instance takes a time
// whenever it is free. At most maxConcurrentRuns runs go at once. The
// core's hooks for them: resolveLocked (a job's key gives its runs too),
// Stop (the runs begun since it resolved, and it waits until they are
// gone), Logs (one ring read once), applyLocked (leaves them to
// syncJobsLocked), reconcile (a stop is a removal) and settleLocked (so is
// the end of the run).

// maxConcurrentRuns bounds the runs of one job at once under concurrency =
// "allow", the first instance's included: a time that finds as many still
// running is skipped, as forbid skips it. Kubernetes leaves the bound to a
// quota; here every run holds a process tree, a cgroup and two pipes of
// the supervisor's, so a job whose runs hang (a lock never released, a
// peer that does not answer) would otherwise add one at each time until
// the machine runs out of pids or memory. Ten is more than a job whose
// runs end needs (they outlast at most a few periods), and keeps the
// numbered keys, and so metric series and log prefixes, few. max_runtime
// is the bound to set per job.
const maxConcurrentRuns = 10

// ReasonMaxRuntime is the reason of a run stopped for passing max_runtime,
// Kubernetes' name for a Job past its activeDeadlineSeconds.
const ReasonMaxRuntime = "DeadlineExceeded"

// maxTimerWait bounds one wait of a job's timer: the timers run on the
// monotonic clock, which stands still while the machine sleeps and does
// not follow a wall-clock step, and a job's times are wall-clock times.
const maxTimerWait = time.Minute

// maxCatchUp bounds the walk over the times missed at once.
const maxCatchUp = 100000

// jobState is what the supervisor keeps of a job besides its instance;
// guarded by Supervisor.mu.
type jobState struct {
	cfg   config.Schedule
	timer clock.Timer
	gen   int       // bumped at each arming: an older timer's call does nothing
	slot  time.Time // the time of the schedule the timer waits for
	at    time.Time // when that time's run is due: slot plus the jitter

	due      bool      // a time came (or start asked for a run): run once
	dueSlot  time.Time // the time the due run is for; zero when asked
	overran  bool      // the current run passed max_runtime: a health kill
	runSeq   int       // runs started; the max_runtime timer's run
	runTimer clock.Timer
	runStart time.Time // when the last run began: max_runtime counts from it

	lastStart   time.Time
	lastResult  string // "succeeded", "failed: exit 1", "skipped: …"
	lastEnd     time.Time
	lastSuccess time.Time

	// first is, for a run beside the job's instance (concurrency =
	// "allow"), that instance; nil for the job's instance itself.
	first *instance
}

// besideLocked reports whether in is a run beside a job's instance
// (concurrency = "allow"), not an instance of the config.
func besideLocked(in *instance) bool { return in.job != nil && in.job.first != nil }

// syncJobsLocked arms a timer for every job that has none, re-arms the ones
// whose schedule changed and disarms those removed or no longer jobs.
// Called from applyLocked.
func (s *Supervisor) syncJobsLocked() {
	now := s.clock.Now()
	var beside []*instance
	for _, in := range s.instances {
		j := in.job
		if besideLocked(in) {
			beside = append(beside, in) // once the first instances are done
			continue
		}
		switch {
		case !in.spec.Scheduled() || in.goal == goalRemove:
			if j == nil {
				continue
			}
			j.stop()
			in.job = nil
			if in.goal == goalRun {
				// A daemon now: a job's run that ended does not keep it down.
				askStartLocked(in, false)
				s.queue.Add(in.key)
			}
		case j == nil:
			in.job = &jobState{cfg: in.spec.Schedule}
			s.armLocked(in, in.job.nextAfter(now))
		case !sameTimes(j.cfg, in.spec.Schedule):
			j.stop()
			j.cfg = in.spec.Schedule
			s.armLocked(in, j.nextAfter(now))
		default:
			// The same times: the limits and policies apply from the next
			// time on, and the timer stays.
			j.cfg = in.spec.Schedule
		}
	}
	for _, in := range beside {
		// A run goes on with the spec it started with while its job is
		// one; gone from the config, or a daemon now, it is stopped.
		f := in.job.first
		if in.goal != goalRemove && (s.instances[f.key] != f || f.goal == goalRemove || f.job == nil) {
			in.goal = goalRemove
			s.queue.Add(in.key)
		}
	}
}

// sameTimes reports whether two schedules fire at the same times.
func sameTimes(a, b config.Schedule) bool {
	return a.Expr == b.Expr && a.Timezone == b.Timezone && a.Jitter == b.Jitter
}

// nextAfter is the first time of the schedule after t; zero when none.
func (j *jobState) nextAfter(t time.Time) time.Time { return j.cfg.Spec.Next(t) }

// stop disarms both timers.
func (j *jobState) stop() {
	j.gen++
	if j.timer != nil {
		j.timer.Stop()
		j.timer = nil
	}
	j.stopRunTimer()
}

func (j *jobState) stopRunTimer() {
	if j.runTimer != nil {
		j.runTimer.Stop()
		j.runTimer = nil
	}
}

// stopJobsLocked disarms every job's timers: the shutdown.
func (s *Supervisor) stopJobsLocked() {
	for _, in := range s.instances {
		if in.job != nil {
			in.job.stop()
		}
	}
}

// armLocked makes in's timer wait for slot (plus a random jitter).
func (s *Supervisor) armLocked(in *instance, slot time.Time) {
	j := in.job
	j.gen++
	if j.timer != nil {
		j.timer.Stop()
		j.timer = nil
	}
	j.slot, j.at = slot, slot
	if slot.IsZero() {
		return // never again (Next found nothing in 30 years)
	}
	if j.cfg.Jitter > 0 {
		j.at = slot.Add(time.Duration(s.randFloat() * float64(j.cfg.Jitter)))
	}
	s.waitLocked(in)
}

// waitLocked sets the timer for j.at, at most maxTimerWait ahead.
func (s *Supervisor) waitLocked(in *instance) {
	j := in.job
	gen := j.gen
	wait := min(max(j.at.Sub(s.clock.Now()), 0), maxTimerWait)
	j.timer = s.clock.AfterFunc(wait, func() { s.jobTimer(in, gen) })
}

// jobTimer is a job's timer going off.
func (s *Supervisor) jobTimer(in *instance, gen int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := in.job
	if j == nil || j.gen != gen || s.shuttingDown || s.instances[in.key] != in {
		return
	}
	j.timer = nil
	now := s.clock.Now()
	if now.Before(j.at) {
		s.waitLocked(in) // a capped wait: not yet
		return
	}
	slot := s.slotDueLocked(in, now)
	s.armLocked(in, j.nextAfter(slot))
}

// slotDueLocked decides what the time that came (and any missed since)
// does; it returns the last of them, which the next time follows.
func (s *Supervisor) slotDueLocked(in *instance, now time.Time) time.Time {
	j := in.job
	slot, late := j.slot, now.Sub(j.at)
	missed := 0
	for n := j.nextAfter(slot); !n.IsZero() && !n.After(now) && missed < maxCatchUp; n = j.nextAfter(n) {
		slot, late = n, now.Sub(n)
		missed++
	}
	if missed > 0 {
		s.events.add(in.key, "", "", fmt.Sprintf("schedule: %d time(s) before %s missed (the machine slept, or the clock jumped); they run as one", missed, stamp(slot)))
	}
	if d := j.cfg.StartingDeadline; d > 0 && late > d {
		j.lastResult, j.lastEnd = fmt.Sprintf("skipped: %s was %s late, past starting_deadline %s", stamp(slot), late.Round(time.Second), d), now
		s.events.add(in.key, "", "", "schedule: the run of "+stamp(slot)+" skipped: "+late.Round(time.Second).String()+" late, past starting_deadline")
		return slot
	}
	if in.goal != goalRun {
		return slot // stopped: the schedule waits for a start
	}
	if in.procID != "" || in.startingID != "" || in.state == Starting || in.state == Stopping {
		if j.cfg.Concurrency == config.ConcurrencyAllow {
			s.runBesideLocked(in, slot, now)
			return slot
		}
		if j.cfg.Concurrency == config.ConcurrencyReplace {
			s.events.add(in.key, "", "", "schedule: the run of "+stamp(slot)+" replaces the one still running (concurrency = replace)")
			in.restartRequested = true // as `supervisectl restart` asks
			j.due, j.dueSlot = true, slot
			s.queue.Add(in.key)
			return slot
		}
		j.lastResult, j.lastEnd = "skipped: "+stamp(slot)+" came while the last run still ran (concurrency = forbid)", now
		s.events.add(in.key, "", "", "schedule: the run of "+stamp(slot)+" skipped: the last run still runs (concurrency = forbid)")
		return slot
	}
	s.events.add(in.key, "", "", "schedule: run of "+stamp(slot))
	j.due, j.dueSlot = true, slot
	// Asked as a command asks: it lifts the last run's end for good, and
	// a retry of the last time's run waiting out its backoff gives way to
	// this time's.
	askStartLocked(in, true)
	s.queue.Add(in.key)
	return slot
}

// runBesideLocked starts the run of slot beside the ones of in still
// going (concurrency = "allow"), as an instance of its own, unless
// maxConcurrentRuns go already.
func (s *Supervisor) runBesideLocked(in *instance, slot, now time.Time) {
	j := in.job
	key := ""
	for n := 1; n < maxConcurrentRuns && key == ""; n++ {
		if k := in.key + "#" + strconv.Itoa(n); s.instances[k] == nil {
			key = k
		}
	}
	what := "the run of " + stamp(slot)
	if slot.IsZero() {
		what = "the run asked for"
	}
	if key == "" {
		j.lastResult, j.lastEnd = fmt.Sprintf("skipped: %s came while %d runs still ran, the most concurrency = allow starts", what, maxConcurrentRuns), now
		s.events.add(in.key, "", "", fmt.Sprintf("schedule: %s skipped: %d runs still run (concurrency = allow runs at most %d at once)", what, maxConcurrentRuns, maxConcurrentRuns))
		return
	}
	run := &instance{
		key:     key,
		spec:    in.spec,
		index:   in.index,
		state:   Stopped,
		backoff: newCrashBackoff(in.spec, s.clock),
		logs:    s.logs.forRun(in.spec, key, in.logs),
		goal:    goalRun,
		job:     &jobState{cfg: j.cfg, first: in, due: true, dueSlot: slot},
	}
	s.addInstanceLocked(run)
	s.events.add(in.key, "", "", "schedule: "+what+" as "+key+", beside the one still running (concurrency = allow)")
	s.notifyChangedLocked()
	s.queue.Add(key)
}

// runsBesideLocked are the keys of the runs beside in (concurrency =
// "allow"), sorted: what a command on in reaches too.
func (s *Supervisor) runsBesideLocked(in *instance) []string {
	if in.job == nil || in.job.first != nil {
		return nil
	}
	var keys []string
	for n := 1; n < maxConcurrentRuns; n++ {
		k := in.key + "#" + strconv.Itoa(n)
		if r := s.instances[k]; r != nil && r.job != nil && r.job.first == in {
			keys = append(keys, k)
		}
	}
	return keys
}

// stopRunsBesideLocked stops the runs beside in, now that in is stopped
// (no time starts one any more), and returns their keys: Stop waits for
// them, the ones begun since it resolved its names included.
func (s *Supervisor) stopRunsBesideLocked(in *instance) []string {
	keys := s.runsBesideLocked(in)
	for _, k := range keys {
		r := s.instances[k]
		r.goal, r.stoppedFor = goalStop, ""
		s.queue.Add(k)
	}
	return keys
}

// stopDoneOrGone is what Stop waits for: stoppedDone, and for a run beside
// a job's instance its removal, so that status after a stop shows no run.
func stopDoneOrGone(in *instance) bool { return stoppedDone(in) && !besideLocked(in) }

// runEndedForGoodLocked removes a run beside a job's instance once its run
// ended for good (settleLocked): its time is over, as a Kubernetes Job's.
func (s *Supervisor) runEndedForGoodLocked(in *instance) {
	if besideLocked(in) && in.goal == goalRun {
		in.goal = goalRemove
		s.queue.Add(in.key)
	}
}

// runStoppedLocked makes a stop of a run beside a job's instance its
// removal: it runs no more times (reconcile).
func runStoppedLocked(in *instance) {
	if besideLocked(in) && in.goal == goalStop {
		in.goal = goalRemove
	}
}

func stamp(t time.Time) string { return t.Format("2006-01-02 15:04:05 MST") }

// runNowLocked is `supervisectl start` on a job: one run now, unless one
// runs; under concurrency = "allow" one beside it then.
func (s *Supervisor) runNowLocked(in *instance) {
	j := in.job
	switch {
	case j == nil:
	case in.procID == "" && in.state != Starting:
		j.due, j.dueSlot = true, time.Time{}
	case j.first == nil && j.cfg.Concurrency == config.ConcurrencyAllow && in.goal == goalRun:
		s.runBesideLocked(in, time.Time{}, s.clock.Now())
	}
}

// jobViewLocked fills in what decideRun looks at of a job.
func jobViewLocked(in *instance, v *runView) {
	if j := in.job; j != nil {
		v.scheduled, v.slotDue = true, j.due
	}
}

// jobRunStartsLocked is reconcileRun starting a run of a job: the due time
// is taken, and max_runtime starts counting.
func (s *Supervisor) jobRunStartsLocked(in *instance) {
	j := in.job
	if j == nil {
		return
	}
	j.due, j.overran = false, false
	j.runSeq++
	j.lastStart = s.clock.Now()
	j.runStart = j.lastStart
	j.stopRunTimer()
	if d := j.cfg.MaxRuntime; d > 0 {
		seq := j.runSeq
		j.runTimer = s.clock.AfterFunc(d, func() { s.maxRuntimeReached(in, seq) })
	}
}

func (s *Supervisor) maxRuntimeReached(in *instance, seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := in.job
	if j == nil || j.runSeq != seq || s.instances[in.key] != in || in.procID == "" && in.startingID == "" && in.state != Starting {
		return
	}
	j.runTimer = nil
	j.overran = true
	s.events.add(in.key, "", "", "schedule: the run passed max_runtime "+j.cfg.MaxRuntime.String()+"; stopping it")
	s.queue.Add(in.key)
}

// jobKillLocked is checkHealthLocked's part for a job: a run that passed
// max_runtime ends as a health kill (ReasonMaxRuntime), through the one
// stop path, and its exit is a failure that is not retried (restartWanted).
func jobKillLocked(in *instance, h *health) {
	if j := in.job; j != nil && j.overran && h.killReason == "" {
		h.killReason = ReasonMaxRuntime
	}
}

// jobRunEndedLocked writes down how a job's run ended, for status and
// metrics; recordExit calls it once the exit is recorded. What follows
// (a retry, or Completed or Failed until the next time) is decideRun's.
func (s *Supervisor) jobRunEndedLocked(in *instance, requested bool) {
	j := in.job
	if j == nil || in.lastExit == nil {
		return
	}
	j.stopRunTimer()
	j.overran = false
	e := in.lastExit
	j.lastEnd = e.FinishedAt
	if j.lastEnd.IsZero() {
		j.lastEnd = s.clock.Now()
	}
	switch {
	case requested:
		j.lastResult = "stopped"
	case e.Reason == ReasonMaxRuntime:
		j.lastResult = "failed: max_runtime " + j.cfg.MaxRuntime.String() + " exceeded"
	case e.failed(in.spec):
		j.lastResult = "failed: " + exitText(e)
	default:
		j.lastResult = "succeeded"
		j.lastSuccess = j.lastEnd
	}
	if f := j.first; f != nil && f.job != nil {
		// The job's last run, whichever instance ran it.
		fj := f.job
		fj.lastStart, fj.lastEnd, fj.lastResult = j.lastStart, j.lastEnd, j.lastResult
		if j.lastSuccess.After(fj.lastSuccess) {
			fj.lastSuccess = j.lastSuccess
		}
	}
	if !requested {
		s.events.add(in.key, "", "", "schedule: run "+j.lastResult)
	}
}

// jobStatusLocked adds a job's schedule, next time and last run to its
// status.
func jobStatusLocked(in *instance, st *ctl.ProgramStatus, now time.Time) {
	j := in.job
	if j == nil {
		return
	}
	st.Schedule = j.cfg.Expr
	if in.goal == goalRun && !j.at.IsZero() {
		next := j.at
		st.NextRun = &next
		st.NextRunInMs = max(next.Sub(now).Milliseconds(), 1)
	}
	if j.lastResult != "" {
		st.LastRun = &ctl.RunInfo{StartedAt: j.lastStart, FinishedAt: j.lastEnd, Result: j.lastResult}
	}
}

// jobMetricsLocked adds a job's times to its metrics. A job counts as up
// for /readyz between its runs: it is not a daemon that should be running.
func jobMetricsLocked(in *instance, p *metrics.Program) {
	j := in.job
	if j == nil {
		return
	}
	p.Scheduled = true
	p.Up = true
	p.LastSuccess = j.lastSuccess
	if j.first != nil {
		// A run beside shares its job's index: its number tells the
		// series apart ("0#1").
		p.Instance += in.key[strings.LastIndexByte(in.key, '#'):]
	}
	if in.goal == goalRun {
		p.NextRun = j.at
	}
}
