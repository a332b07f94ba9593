package probe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/supervise-dev/supervise/clock"
	"github.com/supervise-dev/supervise/internal/httpcheck"
	"github.com/supervise-dev/supervise/proc"
)

// Execer runs a command inside a sandbox; *proc.Runtime implements it.
type Execer interface {
	Exec(ctx context.Context, sandboxID string, cfg proc.ExecConfig) (proc.ExecResult, error)
}

// Config configures the probes of one process run.
type Config struct {
	// Startup, Readiness and Liveness are the probes; nil means none.
	Startup, Readiness, Liveness *Spec
	// Clock drives every probe timer and timeout; nil is the real clock.
	Clock clock.Clock
	// Exec runs command probes in SandboxID; needed only with a command
	// probe.
	Exec      Execer
	SandboxID string
	// ExecConfig is the identity, directory and environment command probes
	// run with (the program's); Args, Stdout and Stderr are the probe's own.
	ExecConfig proc.ExecConfig
	// StartedAt is when the process started: initial delays count from it.
	// Zero means the clock's now at Start.
	StartedAt time.Time
	// Jitter, when set, gives each probe's first run a further delay
	// (from StartedAt, at least the initial delay) for its period: the
	// kubelet spreads its probes' first runs after it starts.
	Jitter func(period time.Duration) time.Duration
	// OnChange is called with the new status whenever Started, Ready or
	// LivenessFailed changes, or a probe gives a new error or warning (see
	// Result), one call at a time, in order, from the
	// Runner's goroutines. It must return quickly (put the key on a queue)
	// and must not call Stop, which waits for those goroutines.
	OnChange func(Status)
	// Logger gets probe failures and state changes; nil discards. Give it
	// the program's attributes.
	Logger *slog.Logger
	// Resume, when set, is where another Runner of the same run left off
	// (an upgrade in place): the counts, verdicts and next times go on
	// from there. The caller has checked it (State.Check).
	Resume *State
}

// Status is what the probes say about the process.
type Status struct {
	// Started: the startup probe passed (true from the start without one).
	// Readiness and liveness probes run only once it is true.
	Started bool
	// Ready: started, and the readiness probe's last verdict (after its
	// thresholds) was success; without a readiness probe, Started. False
	// once LivenessFailed.
	Ready bool
	// LivenessFailed: the liveness probe failed FailureThreshold times in
	// a row, or the startup probe did. The process must be restarted
	// (FailedProbe says which, counted as a crash); the Runner has
	// stopped probing.
	LivenessFailed bool
	// Failure says which probe failed and its last message, when
	// LivenessFailed.
	Failure string
	// FailedProbe is the kind (Startup or Liveness) that failed, when
	// LivenessFailed: the kubelet reports the two kills apart.
	FailedProbe string
	// Last is the last result of each probe that ran, keyed Startup,
	// Readiness, Liveness.
	Last map[string]Result
}

// Result is the outcome of one probe.
type Result struct {
	Time     time.Time // when it finished
	OK       bool
	Message  string        // e.g. "HTTP 200", "exit code 1: not ready", "timed out after 1s"
	Duration time.Duration // how long it took
	// Error: the probe could not run (its command could not be started,
	// its request not built). Such a run is reported but not counted
	// toward either threshold, as the kubelet discards a probe error.
	Error bool
	// Warning is set on a success the kubelet warns about: a redirect to
	// another host, not followed.
	Warning string
}

// Runner runs the probes of one process run, each on its own timer and in
// its own goroutine, until Stop or a liveness failure. A new run of the
// program gets a new Runner.
type Runner struct {
	cfg    Config
	clock  clock.Clock
	log    *slog.Logger
	client *http.Client
	start  time.Time

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once

	// started is closed once the startup probe passed; startedAt is then
	// the time it passed (written before the close).
	started   chan struct{}
	startedAt time.Time

	// notifyMu serialises status changes with their OnChange calls, so the
	// calls come in the order of the changes.
	notifyMu sync.Mutex
	mu       sync.Mutex
	st       Status // guarded by mu
	ready    bool   // guarded by mu; the readiness probe's own verdict
	// counts is where each probe's worker stands (guarded by mu), for
	// State.
	counts map[string]Count
}

// Start validates cfg's probes, applying the kubelet's defaults to zero
// fields, and starts them. The returned Runner's Status is the initial
// state; OnChange reports every change after it. The caller must Stop it.
func Start(cfg Config) (*Runner, error) {
	specs := []struct {
		kind string
		s    **Spec
	}{{Startup, &cfg.Startup}, {Readiness, &cfg.Readiness}, {Liveness, &cfg.Liveness}}
	for _, x := range specs {
		if *x.s == nil {
			continue
		}
		s := (*x.s).WithDefaults()
		if err := s.validate(x.kind); err != nil {
			return nil, err
		}
		if len(s.Command) > 0 && cfg.Exec == nil {
			return nil, fmt.Errorf("%s probe: a command probe needs an Execer", x.kind)
		}
		*x.s = &s
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Runner{
		cfg:     cfg,
		clock:   cfg.Clock,
		log:     log,
		client:  httpcheck.NewClient(),
		start:   cfg.StartedAt,
		started: make(chan struct{}),
		st:      Status{Last: map[string]Result{}},
		counts:  map[string]Count{},
	}
	if r.start.IsZero() {
		r.start = r.clock.Now()
	}
	if cfg.Startup == nil {
		r.startedAt = r.start
		close(r.started)
		r.st.Started = true
		r.st.Ready = cfg.Readiness == nil
	}
	if cfg.Resume != nil {
		r.resumeLocked(cfg.Resume) // no worker runs yet
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	if r.st.LivenessFailed {
		cancel() // resumed at its end: nothing runs any more
		return r, nil
	}
	for _, x := range specs {
		if s := *x.s; s != nil && !(x.kind == Startup && r.st.Started) {
			r.wg.Go(func() { r.worker(ctx, x.kind, *s) })
		}
	}
	return r, nil
}

// Stop stops every probe, abandoning one in flight, and returns once the
// Runner's goroutines have exited: no OnChange call comes after it. It may
// be called more than once.
func (r *Runner) Stop() {
	r.stopOnce.Do(r.cancel)
	r.wg.Wait()
	r.client.CloseIdleConnections()
}

// Status returns the current status; its Last map is a copy.
func (r *Runner) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshotLocked()
}

func (r *Runner) snapshotLocked() Status {
	st := r.st
	st.Last = maps.Clone(r.st.Last)
	return st
}

// worker runs one probe every Period until ctx ends or the probe's verdict
// ends its job (startup passed or failed, liveness failed).
func (r *Runner) worker(ctx context.Context, kind string, s Spec) {
	if kind != Startup {
		select {
		case <-r.started:
		case <-ctx.Done():
			return
		}
	}
	// The kubelet counts the initial delay from the process start, and
	// probes readiness at once when the startup probe passes.
	due := r.start.Add(s.InitialDelay)
	if r.cfg.Jitter != nil {
		if j := r.start.Add(r.cfg.Jitter(s.Period)); due.Before(j) {
			due = j
		}
	}
	if due.Before(r.startedAt) {
		due = r.startedAt
	}
	// run: consecutive results equal to last.
	last, run, due := r.resumed(kind, s, due)
	r.count(kind, last, run, due)
	for {
		if !r.sleepUntil(ctx, due) {
			return
		}
		began := r.clock.Now()
		o := r.probe(ctx, &s)
		ended := r.clock.Now()
		if ctx.Err() != nil {
			return // stopped mid-probe: the result means nothing
		}
		res := Result{Time: ended, OK: o.ok, Message: o.msg, Duration: ended.Sub(began), Error: o.errored, Warning: o.warning}
		switch {
		case o.errored:
			r.recordError(kind, res)
		case run == 0 || o.ok != last:
			last, run = o.ok, 1
		default:
			run++
		}
		if !o.errored && !r.record(kind, s, res, run) {
			return
		}
		// Schedule from when the probe was due, not from when it ended, as a
		// ticker would; a probe that overran skips the periods it missed.
		due = due.Add(s.Period)
		if now := r.clock.Now(); due.Before(now) {
			missed := now.Sub(due)/s.Period + 1
			due = due.Add(missed * s.Period)
		}
		r.count(kind, last, run, due)
	}
}

// sleepUntil waits for the clock to reach due; false when ctx ended first.
func (r *Runner) sleepUntil(ctx context.Context, due time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	d := due.Sub(r.clock.Now())
	if d <= 0 {
		return true
	}
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}

// probe runs s once. Its timeout counts from now, when it runs, as the
// kubelet's: a probe that was due while post_start ran, or whose timer
// fired late on a loaded machine, still gets its whole timeout.
func (r *Runner) probe(ctx context.Context, s *Spec) outcome {
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t := r.clock.AfterFunc(s.Timeout, func() { cancel(errTimeout) })
	defer t.Stop()
	o := r.check(pctx, s)
	if !o.ok && errors.Is(context.Cause(pctx), errTimeout) {
		return outcome{msg: fmt.Sprintf("timed out after %v", s.Timeout)}
	}
	return o
}

// recordError stores a run that could not be made, without counting it,
// and logs it when its message is new.
func (r *Runner) recordError(kind string, res Result) {
	r.notifyMu.Lock()
	defer r.notifyMu.Unlock()
	r.mu.Lock()
	if r.st.LivenessFailed { // the run is over
		r.mu.Unlock()
		return
	}
	prev := r.st.Last[kind]
	r.st.Last[kind] = res
	snap := r.snapshotLocked()
	r.mu.Unlock()
	if prev.Message != res.Message {
		r.log.Warn("probe could not run; not counted", "probe", kind, "msg", res.Message)
		if r.cfg.OnChange != nil {
			r.cfg.OnChange(snap)
		}
	}
}

// record stores the result of one probe of kind, whose result has now come
// run times in a row, and applies its verdict. It returns false when the
// worker's job is over.
func (r *Runner) record(kind string, s Spec, res Result, run int) (more bool) {
	r.notifyMu.Lock()
	defer r.notifyMu.Unlock()

	r.mu.Lock()
	if r.st.LivenessFailed { // another probe ended the run
		r.mu.Unlock()
		return false
	}
	warned := res.Warning != "" && r.st.Last[kind].Warning != res.Warning
	r.st.Last[kind] = res
	before := r.st
	more = r.applyLocked(kind, s, res, run)
	r.st.Ready = r.st.Started && !r.st.LivenessFailed && (r.cfg.Readiness == nil || r.ready)
	changed := before.Started != r.st.Started || before.Ready != r.st.Ready || before.LivenessFailed != r.st.LivenessFailed || warned
	snap := r.snapshotLocked()
	r.mu.Unlock()

	if !res.OK {
		r.log.Debug("probe failed", "probe", kind, "run", run, "msg", res.Message)
	}
	if changed {
		r.announce(kind, res, before, snap, warned)
	}
	return more
}

// applyLocked applies the verdict of a probe of kind whose result has come
// run times in a row. It returns false when the probe's worker is done.
func (r *Runner) applyLocked(kind string, s Spec, res Result, run int) bool {
	passed := res.OK && run >= s.SuccessThreshold
	failed := !res.OK && run >= s.FailureThreshold
	switch {
	case kind == Startup && passed:
		r.st.Started = true
		r.startedAt = r.clock.Now()
		close(r.started)
		return false
	case kind == Startup && failed:
		r.failLocked(Startup, fmt.Sprintf("startup probe failed %d times: %s", run, res.Message))
		return false
	case kind == Readiness && passed:
		r.ready = true
	case kind == Readiness && failed:
		r.ready = false
	case kind == Liveness && failed:
		r.failLocked(Liveness, fmt.Sprintf("liveness probe failed %d times: %s", run, res.Message))
		return false
	}
	return true
}

// announce logs a change of the probes' status and passes it on.
func (r *Runner) announce(kind string, res Result, before, snap Status, warned bool) {
	switch {
	case snap.LivenessFailed:
		r.log.Warn("probe failed: restart needed", "probe", kind, "msg", snap.Failure)
	case before.Ready != snap.Ready:
		r.log.Info("readiness changed", "probe", kind, "ready", snap.Ready, "msg", res.Message)
	case warned:
		r.log.Warn("probe passed with a warning", "probe", kind, "msg", res.Warning)
	}
	if r.cfg.OnChange != nil {
		r.cfg.OnChange(snap)
	}
}

// failLocked marks the run as failed and stops every probe.
func (r *Runner) failLocked(kind, why string) {
	r.st.LivenessFailed = true
	r.st.Failure = why
	r.st.FailedProbe = kind
	r.cancel()
}
