package supervisor

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
)

// exitKey makes the process of instance key (not any process of its
// command, as exit does: a job's runs share one) exit with code, and waits
// until the controller has handled it.
func (h *harness) exitKey(key string, code int) {
	h.t.Helper()
	h.sup.mu.Lock()
	in := h.sup.instances[key]
	id := ""
	if in != nil {
		id = in.procID
	}
	h.sup.mu.Unlock()
	h.rt.mu.Lock()
	p := h.rt.procs[id]
	if p != nil {
		h.rt.exitLocked(p, code, 0)
	}
	h.rt.mu.Unlock()
	if p == nil {
		h.t.Fatalf("%s has no running process", key)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.sup.waitFor(ctx, func() bool { in := h.sup.instances[key]; return in == nil || in.procID != id }); err != nil {
		h.t.Fatalf("exit of %s never handled; now: %s", key, h.sup.statusSummary())
	}
}

// waitGone waits (bounded, real time) until instance key is removed.
func (h *harness) waitGone(key string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.sup.waitFor(ctx, func() bool { return h.sup.instances[key] == nil }); err != nil {
		h.t.Fatalf("%s never went; now: %s", key, h.sup.statusSummary())
	}
}

func (h *harness) procOf(key string) string {
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	if in := h.sup.instances[key]; in != nil {
		return in.procID
	}
	return ""
}

// statusOf is key's line of the status of all: the status of a job's
// name has its runs too.
func (h *harness) statusOf(key string) ctl.ProgramStatus {
	h.t.Helper()
	st, err := h.sup.Status(context.Background(), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, s := range st {
		if s.Name == key {
			return s
		}
	}
	h.t.Fatalf("no status of %s: %v", key, st)
	return ctl.ProgramStatus{}
}

func allowJob(mod ...func(*config.Program)) *config.Program {
	return job("job", "*/30 * * * * *", append([]func(*config.Program){func(p *config.Program) {
		p.Schedule.Concurrency = config.ConcurrencyAllow
	}}, mod...)...)
}

// concurrency = "allow": a time that comes while runs still go starts one
// more beside them, each an instance of its own (job#1, job#2: the lowest
// number free), which ends on its own, is limited by max_runtime on its
// own, and goes once it ended.
func TestJobAllowOverlaps(t *testing.T) {
	h := newHarness(t, allowJob(func(p *config.Program) { p.Schedule.MaxRuntime = 100 * time.Second }))
	h.stepWhenArmed(30 * time.Second) // 00:30
	h.waitState("job", Running)
	h.stepWhenArmed(30 * time.Second) // 01:00, while the first runs
	h.waitState("job#1", Running)
	h.stepWhenArmed(30 * time.Second) // 01:30
	h.waitState("job#2", Running)
	first, second := h.procOf("job"), h.procOf("job#1")
	if first == "" || second == "" || first == second || h.procOf("job#2") == second {
		t.Fatalf("runs share a process: %q %q %q", first, second, h.procOf("job#2"))
	}
	st, err := h.sup.Status(context.Background(), []string{"job"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range st {
		names = append(names, s.Name+"="+s.State)
	}
	if got := strings.Join(names, " "); got != "job=Running job#1=Running job#2=Running" {
		t.Fatalf("status job: %s", got)
	}

	// Each run ends on its own: the others keep running.
	h.exitKey("job#1", 0)
	h.waitGone("job#1")
	if h.procOf("job") != first || h.procOf("job#2") == "" {
		t.Fatalf("the end of job#1 touched the others: %s", h.sup.statusSummary())
	}
	if st := h.statusOf("job"); st.LastRun == nil || st.LastRun.Result != "succeeded" {
		t.Errorf("the job's last run after job#1 succeeded: %+v", st.LastRun)
	}
	h.stepWhenArmed(30 * time.Second) // 02:00: the lowest number free again
	h.waitState("job#1", Running)

	// max_runtime 100s is each run's: the one of 00:30 ends at 02:10, the
	// others run on.
	h.stepWhenArmed(10 * time.Second)
	h.waitState("job", Failed)
	if st := h.statusOf("job"); st.LastExit == nil || st.LastExit.Reason != ReasonMaxRuntime {
		t.Fatalf("job after its max_runtime: %+v", st.LastExit)
	}
	if h.procOf("job#1") == "" || h.procOf("job#2") == "" {
		t.Fatalf("max_runtime of the first run ended others: %s", h.sup.statusSummary())
	}
	h.stepWhenArmed(20 * time.Second) // 02:30: the first instance is free again
	h.waitState("job", Running)
	h.stepWhenArmed(30 * time.Second) // 03:00
	h.waitState("job#3", Running)
	h.stepWhenArmed(10 * time.Second) // 03:10: the run of 01:30 passes its 100s
	h.waitGone("job#2")
	if h.procOf("job") == "" || h.procOf("job#1") == "" || h.procOf("job#3") == "" {
		t.Fatalf("max_runtime of job#2 ended others: %s", h.sup.statusSummary())
	}
	h.wantStarts("job", 30*time.Second, time.Minute, 90*time.Second, 2*time.Minute, 150*time.Second, 3*time.Minute)
	if st := h.statusOf("job"); st.LastRun == nil || !strings.Contains(st.LastRun.Result, "max_runtime") {
		t.Errorf("the job's last run after job#2 passed max_runtime: %+v", st.LastRun)
	}

	// stop stops every run; the ones beside the first go.
	if err := h.sup.Stop(context.Background(), []string{"job"}, ctl.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitGone("job#1")
	h.waitState("job", Stopped)
	if got := h.sup.statusSummary(); got != "job=Stopped" {
		t.Fatalf("after stop: %s", got)
	}
}

// The runs beside the first are bounded: a time that finds
// maxConcurrentRuns runs still going is skipped, as forbid skips one.
func TestJobAllowBound(t *testing.T) {
	h := newHarness(t, allowJob())
	for i := range maxConcurrentRuns {
		h.stepWhenArmed(30 * time.Second)
		key := "job"
		if i > 0 {
			key = "job#" + strconv.Itoa(i)
		}
		h.waitState(key, Running)
	}
	h.stepWhenArmed(30 * time.Second)
	h.waitJob("job", "skipped a time", func(j *jobState) bool { return strings.Contains(j.lastResult, "skipped:") })
	if got := len(h.rt.startTimes("job")); got != maxConcurrentRuns {
		t.Fatalf("%d runs started, want %d", got, maxConcurrentRuns)
	}
	h.sup.mu.Lock()
	_, over := h.sup.instances["job#"+strconv.Itoa(maxConcurrentRuns)]
	h.sup.mu.Unlock()
	if over {
		t.Fatal("a run past the bound")
	}
}

// A reload that keeps the job keeps its runs; one that removes the job
// stops them all.
func TestJobAllowReload(t *testing.T) {
	h := newHarness(t, allowJob(), program("web"))
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job#1", Running)
	run := h.procOf("job#1")
	cfg := func(ps ...*config.Program) *config.Config {
		return &config.Config{File: "test.toml", Supervisor: h.sup.cfg.Supervisor, Programs: ps}
	}
	if err := h.sup.ApplyConfig(context.Background(), cfg(allowJob(func(p *config.Program) { p.Schedule.MaxRuntime = time.Hour }), program("web"))); err != nil {
		t.Fatal(err)
	}
	if h.procOf("job#1") != run {
		t.Fatalf("a reload that keeps the job ended its run: %s", h.sup.statusSummary())
	}
	if err := h.sup.ApplyConfig(context.Background(), cfg(program("web"))); err != nil {
		t.Fatal(err)
	}
	h.waitGone("job#1")
	h.waitGone("job")
}

// A failed run beside the first is retried in its own instance, with its
// own crash backoff, and goes once it succeeds.
func TestJobAllowRetriesARunBeside(t *testing.T) {
	h := newHarness(t, allowJob())
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job#1", Running)
	h.exitKey("job#1", 1) // the first crash: again at once
	h.waitState("job#1", Running)
	h.exitKey("job#1", 1)
	h.waitState("job#1", CrashLoopBackOff)
	if st := h.statusOf("job"); st.State != "Running" || st.Restarts != 0 {
		t.Fatalf("the first instance took the run beside's crashes: %+v", st)
	}
	h.stepWhenArmed(10 * time.Second)
	h.waitState("job#1", Running)
	h.exitKey("job#1", 0)
	h.waitGone("job#1")
	h.wantStarts("job", 30*time.Second, time.Minute, time.Minute, 70*time.Second)
}

// The metrics tell the runs apart: each is a series of its own (the
// program and instance labels), not a second sample of the first's.
func TestJobAllowMetrics(t *testing.T) {
	h := newHarness(t, allowJob())
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job#1", Running)
	seen := map[string]string{}
	for _, p := range h.sup.Snapshot().Programs {
		id := p.Program + " " + p.Instance
		if other, dup := seen[id]; dup {
			t.Errorf("%s and %s are both program %q instance %q", other, p.Name, p.Program, p.Instance)
		}
		seen[id] = p.Name
		if !p.Scheduled {
			t.Errorf("%s is not shown as scheduled", p.Name)
		}
	}
	if len(seen) != 2 {
		t.Errorf("metrics of %v, want job and job#1", seen)
	}
}

// start on a job whose run still goes runs one now beside it, as a time
// would (kubectl create job --from=cronjob makes one whatever runs).
func TestJobAllowStartRunsBeside(t *testing.T) {
	h := newHarness(t, allowJob())
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	if err := h.sup.Start(context.Background(), []string{"job"}, ctl.WaitOptions{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	h.waitState("job#1", Running)
	h.wantStarts("job", 30*time.Second, 30*time.Second)
}

// restart on the job's name replaces every run's process; the runs
// beside stay runs (not removed as ended).
func TestJobAllowRestart(t *testing.T) {
	h := newHarness(t, allowJob())
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job", Running)
	h.stepWhenArmed(30 * time.Second)
	h.waitState("job#1", Running)
	first, beside := h.procOf("job"), h.procOf("job#1")
	if err := h.sup.Restart(context.Background(), []string{"job"}, ctl.RestartOptions{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if p := h.procOf("job"); p == "" || p == first {
		t.Errorf("job's process %q after restart (was %q)", p, first)
	}
	if p := h.procOf("job#1"); p == "" || p == beside {
		t.Errorf("job#1's process %q after restart (was %q)", p, beside)
	}
}
