package supervisor

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/schedule"
)

// job is a scheduled program in UTC, restart on-failure, concurrency forbid.
func job(name, expr string, mod ...func(*config.Program)) *config.Program {
	spec, err := schedule.Parse(expr, time.UTC)
	if err != nil {
		panic(err)
	}
	first := func(p *config.Program) {
		p.Restart = config.RestartOnFailure
		p.Schedule = config.Schedule{Expr: expr, Spec: spec, Location: time.UTC, Concurrency: config.ConcurrencyForbid}
	}
	return program(name, append([]func(*config.Program){first}, mod...)...)
}

// waitJob polls (bounded, real time) until cond holds of key's job: the
// job's bookkeeping wakes no waiter of its own.
func (h *harness) waitJob(key string, what string, cond func(j *jobState) bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		h.sup.mu.Lock()
		in := h.sup.instances[key]
		ok := in != nil && in.job != nil && cond(in.job)
		h.sup.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("%s: never %s; now: %s", key, what, h.sup.statusSummary())
}

func (h *harness) status(key string) ctl.ProgramStatus {
	h.t.Helper()
	st, err := h.sup.Status(context.Background(), []string{key})
	if err != nil || len(st) != 1 {
		h.t.Fatalf("status %s: %v %v", key, st, err)
	}
	return st[0]
}

func (h *harness) wantStarts(name string, offsets ...time.Duration) {
	h.t.Helper()
	got := h.rt.startTimes(name)
	var want []time.Time
	for _, o := range offsets {
		want = append(want, t0.Add(o))
	}
	if len(got) != len(want) {
		h.t.Fatalf("%s started at %v, want %v", name, got, want)
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			h.t.Fatalf("%s started at %v, want %v", name, got, want)
		}
	}
}

func TestJobRunsAtItsTimesOnly(t *testing.T) {
	h := newHarness(t, job("job", "*/30 * * * * *"))
	st := h.status("job")
	if st.Schedule != "*/30 * * * * *" || st.NextRun == nil || !st.NextRun.Equal(t0.Add(30*time.Second)) || st.NextRunInMs != 30000 {
		t.Fatalf("before the first time: %+v", st)
	}
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.exit("job", 0)
	h.waitState("job", Completed)
	st = h.status("job")
	if st.LastRun == nil || st.LastRun.Result != "succeeded" || !st.NextRun.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after a run: %+v last run %+v", st, st.LastRun)
	}
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	// Not at Run (the supervisor's start), only at its times.
	h.wantStarts("job", 30*time.Second, time.Minute)
	if snap := h.sup.Snapshot(); !snap.Programs[0].Scheduled || !snap.Programs[0].Up ||
		!snap.Programs[0].LastSuccess.Equal(t0.Add(30*time.Second)) || !snap.Programs[0].NextRun.Equal(t0.Add(90*time.Second)) {
		t.Errorf("metrics: %+v", snap.Programs[0])
	}
}

// A job keeps the supervisor up: it is not "every program ended for good"
// between its runs.
func TestJobAloneKeepsSupervising(t *testing.T) {
	h := newHarness(t, job("job", "*/30 * * * * *", func(p *config.Program) { p.Restart = config.RestartNever }))
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.exit("job", 1)
	h.waitState("job", Failed)
	select {
	case <-h.sup.done:
		t.Fatal("the supervisor took a job between runs for the end of everything")
	default:
	}
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
}

func TestJobForbidSkipsATimeWhileRunning(t *testing.T) {
	h := newHarness(t, job("job", "*/30 * * * * *"))
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.stepWhenArmed(30 * time.Second) // the next time, while the first run runs
	h.waitJob("job", "skipped a time", func(j *jobState) bool { return strings.HasPrefix(j.lastResult, "skipped:") })
	h.exit("job", 0)
	h.waitState("job", Completed)
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.wantStarts("job", 30*time.Second, 90*time.Second)
}

func TestJobReplaceStopsTheRunningOne(t *testing.T) {
	h := newHarness(t, job("job", "*/30 * * * * *", func(p *config.Program) { p.Schedule.Concurrency = config.ConcurrencyReplace }))
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.sup.mu.Lock()
	first := h.sup.instances["job"].procID
	h.sup.mu.Unlock()
	h.stepWhenArmed(30 * time.Second)
	h.waitJob("job", "replaced its run", func(j *jobState) bool { return j.runSeq == 2 })
	h.waitState("job", Running)
	h.sup.mu.Lock()
	second := h.sup.instances["job"].procID
	h.sup.mu.Unlock()
	if second == first || second == "" {
		t.Fatalf("process %q after replacing %q", second, first)
	}
	h.wantStarts("job", 30*time.Second, time.Minute)
	if st := h.status("job"); st.LastRun == nil || st.LastRun.Result != "stopped" {
		t.Errorf("last run: %+v", st.LastRun)
	}
}

func TestJobMaxRuntime(t *testing.T) {
	h := newHarness(t, job("job", "*/30 * * * * *", func(p *config.Program) { p.Schedule.MaxRuntime = 10 * time.Second }))
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.stepWhenArmed(10 * time.Second)
	h.waitState("job", Failed)
	st := h.status("job")
	if st.LastExit == nil || st.LastExit.Reason != ReasonMaxRuntime || st.LastRun == nil || !strings.Contains(st.LastRun.Result, "max_runtime 10s exceeded") {
		t.Fatalf("after max_runtime: %+v exit %+v run %+v", st, st.LastExit, st.LastRun)
	}
	// Not retried, though restart = on-failure: the run's time is over.
	h.stepWhenArmed(20 * time.Second)
	h.waitState("job", Running)
	h.wantStarts("job", 30*time.Second, time.Minute)
}

func TestJobFailedRunRetriedWithBackoff(t *testing.T) {
	h := newHarness(t, job("job", "0 * * * * *"))
	h.stepWhenArmed(time.Minute)
	h.waitState("job", Running)
	h.exit("job", 1) // first crash: again at once, as the kubelet does
	h.waitState("job", Running)
	h.exit("job", 1)
	h.waitState("job", CrashLoopBackOff)
	h.stepWhenArmed(10 * time.Second)
	h.waitState("job", Running)
	h.exit("job", 0)
	h.waitState("job", Completed)
	h.stepWhenArmed(50 * time.Second)
	h.waitState("job", Running)
	h.wantStarts("job", time.Minute, time.Minute, 70*time.Second, 2*time.Minute)
}

// The machine slept (or supervise was busy) past a job's times: without
// starting_deadline the last one runs, however late, once; with it a time
// later than the deadline is skipped.
func TestJobMissedTimes(t *testing.T) {
	h := newHarness(t,
		job("any", "0 * * * *"),
		job("late", "0 * * * *", func(p *config.Program) { p.Schedule.StartingDeadline = 5 * time.Minute }),
	)
	h.clock.SetTime(t0.Add(80 * time.Minute)) // 01:20, 20 minutes past 01:00
	h.waitState("any", Running)
	h.waitJob("late", "skipped 01:00", func(j *jobState) bool { return strings.Contains(j.lastResult, "past starting_deadline") })
	h.exit("any", 0)
	h.waitState("any", Completed)

	h.clock.SetTime(t0.Add(200 * time.Minute)) // 03:20: 02:00 and 03:00 missed
	h.waitState("any", Running)
	h.waitJob("late", "skipped 03:00", func(j *jobState) bool {
		return strings.Contains(j.lastResult, "03:00:00") && j.slot.Equal(t0.Add(4*time.Hour))
	})
	h.exit("any", 0)
	h.waitState("any", Completed)

	h.clock.SetTime(t0.Add(243 * time.Minute)) // 04:03: within the deadline
	h.waitState("late", Running)
	h.waitState("any", Running)
	h.wantStarts("any", 80*time.Minute, 200*time.Minute, 243*time.Minute)
	h.wantStarts("late", 243*time.Minute)
	var missed bool
	evs, _ := h.sup.Events(context.Background(), false)
	for ev := range evs {
		missed = missed || ev.Program == "any" && strings.Contains(ev.Message, "1 time(s) before 2026-01-01 03:00:00 UTC missed")
	}
	if !missed {
		t.Error("no event for the missed times")
	}
}

func TestJobStartRunsOneNow(t *testing.T) {
	h := newHarness(t, job("job", "*/30 * * * * *"))
	if err := h.sup.Start(context.Background(), []string{"job"}, ctl.WaitOptions{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	h.waitState("job", Running)
	h.exit("job", 0)
	h.waitState("job", Completed)
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.wantStarts("job", 0, 30*time.Second)
}

// The job's timer is the supervisor's: removed from the config, the job's
// timer goes.
func TestJobTimerStoppedOnRemoval(t *testing.T) {
	h := newHarness(t, job("job", "*/30 * * * * *"), program("web"))
	h.waitState("web", Running)
	slot := t0.Add(30 * time.Second)
	if !h.clock.HasWaiterAt(slot) {
		t.Fatal("no timer for the job's first time")
	}
	if err := h.sup.ApplyConfig(context.Background(), &config.Config{File: "test.toml", Supervisor: h.sup.cfg.Supervisor, Programs: []*config.Program{program("web")}}); err != nil {
		t.Fatal(err)
	}
	if h.clock.HasWaiterAt(slot) {
		t.Fatal("the removed job's timer is still armed")
	}
}

func TestJobJitter(t *testing.T) {
	h := newHarness(t, job("job", "*/30 * * * * *"), program("web"))
	h.waitState("web", Running)
	h.sup.mu.Lock()
	h.sup.randFloat = func() float64 { return 0.5 }
	h.sup.mu.Unlock()
	withJitter := job("job", "*/30 * * * * *", func(p *config.Program) { p.Schedule.Jitter = 20 * time.Second })
	if err := h.sup.ApplyConfig(context.Background(), &config.Config{File: "test.toml", Supervisor: h.sup.cfg.Supervisor, Programs: []*config.Program{withJitter, program("web")}}); err != nil {
		t.Fatal(err)
	}
	if st := h.status("job"); !st.NextRun.Equal(t0.Add(40 * time.Second)) {
		t.Fatalf("next run %v, want 00:00:40 (00:30 plus half of 20s)", st.NextRun)
	}
	h.stepWhenArmed(40 * time.Second)
	h.waitState("job", Running)
	h.wantStarts("job", 40*time.Second)
}

// TestDecideRunJobs: what a job adds to the restart rule.
func TestDecideRunJobs(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    runView
		want runStep
	}{
		{"job between its times", runView{scheduled: true}, stepNothing},
		{"job between its times, a dependency back asks a start", runView{scheduled: true, startAsked: true}, stepNothing},
		{"job's time came", runView{scheduled: true, slotDue: true, startAsked: true, waiveBackoff: true}, stepStart},
		{"job's time came after a run that ended for good", runView{scheduled: true, settled: true, slotDue: true, startAsked: true, waiveBackoff: true}, stepStart},
		{"job's time came during a retry's backoff", runView{scheduled: true, afterExit: true, policyRestart: true, backoffLeft: time.Second, slotDue: true, startAsked: true, waiveBackoff: true}, stepStart},
		{"job's failed run, backoff over", runView{scheduled: true, afterExit: true, policyRestart: true}, stepStart},
		{"job's failed run, in backoff", runView{scheduled: true, afterExit: true, policyRestart: true, backoffLeft: time.Second}, stepBackOff},
		{"job's run ended, the policy says stay down", runView{scheduled: true, afterExit: true}, stepSettle},
		{"job restarted by hand", runView{scheduled: true, restartRequested: true, startAsked: true}, stepStart},
		{"job's run past max_runtime (a health kill)", runView{scheduled: true, running: true, unhealthy: true}, stepStopUnhealthy},
		{"job running, its time came", runView{scheduled: true, running: true, slotDue: true}, stepNothing},
		{"job's time came, a dependency unmet", runView{scheduled: true, slotDue: true, unmetDep: "db"}, stepWaitDependency},
		{"job's time came during the shutdown", runView{scheduled: true, slotDue: true, shuttingDown: true}, stepNothing},
	} {
		if got := decideRun(tc.v).step; got != tc.want {
			t.Errorf("%s: %+v → %v, want %v", tc.name, tc.v, got, tc.want)
		}
	}
}

// A reload that changes a job's limits (same times) applies them to the
// next run.
func TestJobReloadAppliesNewLimits(t *testing.T) {
	h := newHarness(t, job("job", "*/30 * * * * *"), program("web"))
	h.waitState("web", Running)
	limited := job("job", "*/30 * * * * *", func(p *config.Program) { p.Schedule.MaxRuntime = 10 * time.Second })
	if err := h.sup.ApplyConfig(context.Background(), &config.Config{File: "test.toml", Supervisor: h.sup.cfg.Supervisor, Programs: []*config.Program{limited, program("web")}}); err != nil {
		t.Fatal(err)
	}
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.stepWhenArmed(10 * time.Second)
	h.waitState("job", Failed)
}

// A job that failed is not the supervisor's exit status: the run failed,
// not the program for good.
func TestJobFailureIsNotTheExitStatus(t *testing.T) {
	h := newHarness(t, job("job", "*/30 * * * * *", func(p *config.Program) { p.Restart = config.RestartNever }))
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.exit("job", 3)
	h.waitState("job", Failed)
	h.stop()
	select {
	case code := <-h.code:
		if code != 0 {
			t.Errorf("exit status %d, want 0", code)
		}
		h.code <- code // for the harness's cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}

// A job made a daemon by a reload runs as one at once, even after a run
// that completed.
func TestJobBecomesDaemonOnReload(t *testing.T) {
	h := newHarness(t, job("job", "*/30 * * * * *"), program("web"))
	h.waitState("web", Running)
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.exit("job", 0)
	h.waitState("job", Completed)
	if err := h.sup.ApplyConfig(context.Background(), &config.Config{File: "test.toml", Supervisor: h.sup.cfg.Supervisor, Programs: []*config.Program{program("job"), program("web")}}); err != nil {
		t.Fatal(err)
	}
	h.waitState("job", Running)
}

// A reload may come as Run begins (a job's timer is armed by every apply):
// Run must read the config it starts its workers by under the lock.
func TestReloadAsRunBegins(t *testing.T) {
	for range 20 {
		clock := fakeclock.New(t0)
		cfg := &config.Config{File: "test.toml", Supervisor: config.Supervisor{Workers: 2, ShutdownTimeout: 5 * time.Second}, Programs: []*config.Program{program("web")}}
		sup, err := New(Options{Config: cfg, Runtime: newFakeRuntime(clock), Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Console: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		reloaded := make(chan error, 1)
		go func() {
			next := *cfg
			next.Programs = []*config.Program{program("web"), job("job", "*/30 * * * * *")}
			reloaded <- sup.ApplyConfig(ctx, &next)
		}()
		done := make(chan int, 1)
		go func() { done <- sup.Run(ctx) }()
		if err := <-reloaded; err != nil {
			t.Fatal(err)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	}
}
