package probe

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
	"github.com/supervise-dev/supervise/proc"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// execOutcome is what the fake Execer answers for one command.
type execOutcome struct {
	code int
	out  string
	hang bool // block until the probe's context ends
}

// fakeExec answers command probes by their argv[0] ("startup", "ready",
// "live"), with the execOutcome currently set for it, and records every call.
type fakeExec struct {
	clock *fakeclock.Clock
	mu    sync.Mutex
	next  map[string]execOutcome // guarded by mu
	calls []execCall             // guarded by mu
}

type execCall struct {
	name string
	at   time.Duration // since t0
	cfg  proc.ExecConfig
}

func newFakeExec(c *fakeclock.Clock) *fakeExec {
	return &fakeExec{clock: c, next: map[string]execOutcome{}}
}

func (f *fakeExec) set(name string, o execOutcome) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next[name] = o
}

func (f *fakeExec) Exec(ctx context.Context, sid string, cfg proc.ExecConfig) (proc.ExecResult, error) {
	f.mu.Lock()
	o, ok := f.next[cfg.Args[0]]
	f.calls = append(f.calls, execCall{name: cfg.Args[0], at: f.clock.Now().Sub(t0), cfg: cfg})
	f.mu.Unlock()
	if !ok {
		return proc.ExecResult{}, errors.New("no such command")
	}
	if err := ctx.Err(); err != nil { // as a real Exec: nothing starts under an ended context
		return proc.ExecResult{}, err
	}
	if o.hang {
		<-ctx.Done()
		return proc.ExecResult{}, ctx.Err()
	}
	if o.out != "" {
		cfg.Stdout.Write([]byte(o.out))
	}
	return proc.ExecResult{ExitCode: o.code}, nil
}

// times returns when name was called, as offsets from t0.
func (f *fakeExec) times(name string) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Duration
	for _, c := range f.calls {
		if c.name == name {
			out = append(out, c.at)
		}
	}
	return out
}

// changes records OnChange calls.
type changes struct {
	mu  sync.Mutex
	all []Status // guarded by mu
}

func (c *changes) add(s Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, s)
}

func (c *changes) get() []Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Status(nil), c.all...)
}

var (
	pass = execOutcome{code: 0}
	fail = execOutcome{code: 1, out: "not yet\nsecond line"}
)

// env is one test's fake world inside a synctest bubble: stepping the
// clock and then synctest.Wait leaves every probe goroutine parked on its
// next timer, so the test reads a settled state.
type env struct {
	t     *testing.T
	clock *fakeclock.Clock
	exec  *fakeExec
	ch    *changes
}

func newEnv(t *testing.T) *env {
	c := fakeclock.New(t0)
	return &env{t: t, clock: c, exec: newFakeExec(c), ch: &changes{}}
}

func (e *env) start(cfg Config) *Runner {
	e.t.Helper()
	cfg.Clock, cfg.Exec, cfg.OnChange = e.clock, e.exec, e.ch.add
	r, err := Start(cfg)
	if err != nil {
		e.t.Fatalf("Start: %v", err)
	}
	e.t.Cleanup(r.Stop)
	synctest.Wait()
	return r
}

// stepTo moves the clock to t0+at and lets the probes settle.
func (e *env) stepTo(at time.Duration) {
	e.clock.SetTime(t0.Add(at))
	synctest.Wait()
}

func (e *env) wantTimes(name string, want ...time.Duration) {
	e.t.Helper()
	got := e.exec.times(name)
	if len(got) != len(want) {
		e.t.Fatalf("%s probed at %v, want %v", name, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			e.t.Fatalf("%s probed at %v, want %v", name, got, want)
		}
	}
}

func (e *env) wantArmed(at time.Duration) {
	e.t.Helper()
	if !e.clock.HasWaiterAt(t0.Add(at)) {
		e.t.Fatalf("no probe timer armed at %v", at)
	}
}

const s = time.Second

func TestSpecDefaults(t *testing.T) {
	got := Spec{TCP: "x:1"}.WithDefaults()
	want := Spec{TCP: "x:1", Period: 10 * s, Timeout: s, SuccessThreshold: 1, FailureThreshold: 3}
	if got.Period != want.Period || got.Timeout != want.Timeout || got.SuccessThreshold != want.SuccessThreshold ||
		got.FailureThreshold != want.FailureThreshold || got.InitialDelay != 0 {
		t.Fatalf("WithDefaults = %+v, want %+v", got, want)
	}
}

func TestStartRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no handler", Config{Readiness: &Spec{}}, "readiness probe: needs a command"},
		{"two handlers", Config{Liveness: &Spec{TCP: "a:1", Command: []string{"x"}}}, "one of command, http and tcp"},
		{"bad url", Config{Readiness: &Spec{HTTP: &HTTPCheck{URL: "ftp://x/"}}}, "not an http"},
		{"bad tcp", Config{Readiness: &Spec{TCP: "nohostport"}}, "tcp \"nohostport\""},
		{"liveness success threshold", Config{Liveness: &Spec{TCP: "a:1", SuccessThreshold: 2}}, "success threshold must be 1"},
		{"startup success threshold", Config{Startup: &Spec{TCP: "a:1", SuccessThreshold: 3}}, "startup probe: success threshold"},
		{"command without exec", Config{Startup: &Spec{Command: []string{"x"}}}, "needs an Execer"},
		{"negative delay", Config{Readiness: &Spec{TCP: "a:1", InitialDelay: -s}}, "negative initial delay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Start(tc.cfg)
			if err == nil {
				r.Stop()
				t.Fatalf("Start: no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestNoProbesReadyAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		r := e.start(Config{})
		if st := r.Status(); !st.Started || !st.Ready || st.LivenessFailed {
			t.Fatalf("status = %+v, want started and ready", st)
		}
		if n := e.clock.Waiters(); n != 0 {
			t.Fatalf("%d timers armed without probes", n)
		}
		r.Stop()
		r.Stop() // idempotent
		if n := len(e.ch.get()); n != 0 {
			t.Fatalf("%d OnChange calls, want none", n)
		}
	})
}

// TestReadinessThresholds: initial delay, period, success and failure
// thresholds, and that only Ready changes.
func TestReadinessThresholds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.set("ready", fail)
		r := e.start(Config{
			Readiness:  &Spec{Command: []string{"ready"}, InitialDelay: 5 * s, Period: 10 * s, SuccessThreshold: 2, FailureThreshold: 3},
			SandboxID:  "sb-1",
			ExecConfig: proc.ExecConfig{User: "nobody", Dir: "/srv", Env: []string{"A=1"}},
		})
		if st := r.Status(); !st.Started || st.Ready {
			t.Fatalf("initial status = %+v, want started, not ready", st)
		}
		e.wantArmed(5 * s)
		e.stepTo(5*s - time.Nanosecond)
		e.wantTimes("ready") // not before the initial delay

		e.stepTo(5 * s)
		e.wantTimes("ready", 5*s)
		e.wantArmed(15 * s)
		st := r.Status()
		if st.Ready {
			t.Fatal("ready after a failure")
		}
		if got := st.Last[Readiness]; got.OK || got.Message != "exit code 1: not yet …" || !got.Time.Equal(t0.Add(5*s)) {
			t.Fatalf("last result = %+v", got)
		}
		c := e.exec.calls[0].cfg
		if c.User != "nobody" || c.Dir != "/srv" || len(c.Env) != 1 || c.Args[0] != "ready" {
			t.Fatalf("exec config = %+v, want the program's identity with the probe's args", c)
		}

		e.exec.set("ready", pass)
		e.stepTo(15 * s)
		if r.Status().Ready {
			t.Fatal("ready after 1 success with success_threshold 2")
		}
		e.stepTo(25 * s)
		if !r.Status().Ready {
			t.Fatal("not ready after 2 successes")
		}
		e.exec.set("ready", fail)
		e.stepTo(35 * s)
		e.stepTo(45 * s)
		if !r.Status().Ready {
			t.Fatal("not ready after 2 failures with failure_threshold 3")
		}
		e.stepTo(55 * s)
		st = r.Status()
		if st.Ready || !st.Started || st.LivenessFailed {
			t.Fatalf("after 3 failures: %+v, want started, not ready, not failed", st)
		}
		e.wantTimes("ready", 5*s, 15*s, 25*s, 35*s, 45*s, 55*s)
		e.wantArmed(65 * s)

		got := e.ch.get()
		if len(got) != 2 || !got[0].Ready || got[1].Ready {
			t.Fatalf("OnChange calls = %+v, want ready then not ready", got)
		}
	})
}

// TestLivenessFailure: a success resets the failure count; FailureThreshold
// failures in a row report LivenessFailed once and end all probing.
func TestLivenessFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.set("live", fail)
		e.exec.set("ready", pass)
		r := e.start(Config{
			Readiness: &Spec{Command: []string{"ready"}, Period: 5 * s},
			Liveness:  &Spec{Command: []string{"live"}, Period: 10 * s, FailureThreshold: 3},
		})
		// t=0: both probe at once (no initial delay).
		e.wantTimes("live", 0)
		if st := r.Status(); !st.Ready || st.LivenessFailed {
			t.Fatalf("status at 0 = %+v, want ready", st)
		}
		e.stepTo(5 * s)
		e.stepTo(10 * s) // second failure
		e.exec.set("live", pass)
		e.stepTo(15 * s)
		e.stepTo(20 * s) // success: count starts over
		e.exec.set("live", fail)
		for at := 25 * s; at <= 40*s; at += 5 * s {
			e.stepTo(at)
			if r.Status().LivenessFailed {
				t.Fatalf("liveness failed at %v after 2 failures in a row", at)
			}
		}
		e.stepTo(50 * s) // failures at 30, 40, 50
		st := r.Status()
		if !st.LivenessFailed || st.Ready || !st.Started {
			t.Fatalf("status = %+v, want liveness failed, not ready", st)
		}
		if want := "liveness probe failed 3 times: exit code 1: not yet …"; st.Failure != want {
			t.Fatalf("Failure = %q, want %q", st.Failure, want)
		}
		e.wantTimes("live", 0, 10*s, 20*s, 30*s, 40*s, 50*s)
		if n := e.clock.Waiters(); n != 0 {
			t.Fatalf("%d timers still armed after the liveness failure", n)
		}
		readies := len(e.exec.times("ready"))
		e.stepTo(time.Hour)
		e.wantTimes("live", 0, 10*s, 20*s, 30*s, 40*s, 50*s)
		if n := len(e.exec.times("ready")); n != readies {
			t.Fatalf("readiness ran %d times after the liveness failure", n-readies)
		}
		var failed int
		for _, c := range e.ch.get() {
			if c.LivenessFailed {
				failed++
			}
		}
		if failed != 1 {
			t.Fatalf("%d OnChange calls report the failure, want 1: %+v", failed, e.ch.get())
		}
	})
}

// TestStartupGates: readiness and liveness wait for the startup probe,
// run at once when it passes, and it never runs again.
func TestStartupGates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.set("startup", fail)
		e.exec.set("ready", pass)
		e.exec.set("live", pass)
		r := e.start(Config{
			Startup:   &Spec{Command: []string{"startup"}, InitialDelay: 2 * s, Period: 3 * s, FailureThreshold: 3},
			Readiness: &Spec{Command: []string{"ready"}, InitialDelay: 5 * s, Period: 10 * s},
			Liveness:  &Spec{Command: []string{"live"}, InitialDelay: 20 * s, Period: 10 * s},
		})
		if st := r.Status(); st.Started || st.Ready {
			t.Fatalf("initial status = %+v, want not started", st)
		}
		e.stepTo(2 * s)
		e.stepTo(5 * s)
		e.wantTimes("startup", 2*s, 5*s)
		e.wantTimes("ready")
		e.wantTimes("live")
		if st := r.Status(); st.Started || st.Ready || st.LivenessFailed {
			t.Fatalf("after 2 startup failures: %+v", st)
		}
		e.exec.set("startup", pass)
		e.stepTo(8 * s)
		st := r.Status()
		if !st.Started || !st.Ready {
			t.Fatalf("after the startup probe passed: %+v, want started and ready", st)
		}
		e.wantTimes("ready", 8*s) // at once: its initial delay (5s) is over
		e.wantTimes("live")       // its initial delay (20s) is not
		e.wantArmed(18 * s)
		e.wantArmed(20 * s)
		e.stepTo(18 * s)
		e.stepTo(20 * s)
		e.wantTimes("startup", 2*s, 5*s, 8*s)
		e.wantTimes("ready", 8*s, 18*s)
		e.wantTimes("live", 20*s)

		got := e.ch.get()
		if len(got) != 2 || !got[0].Started || got[0].Ready || !got[1].Ready {
			t.Fatalf("OnChange calls = %+v, want started, then ready", got)
		}
	})
}

// TestStartupWithoutReadiness: a passed startup probe makes the program
// ready when it has no readiness probe.
func TestStartupWithoutReadiness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.set("startup", pass)
		r := e.start(Config{Startup: &Spec{Command: []string{"startup"}, InitialDelay: time.Second}})
		if st := r.Status(); st.Started || st.Ready {
			t.Fatalf("initial status = %+v", st)
		}
		e.stepTo(time.Second)
		got := e.ch.get()
		if len(got) != 1 || !got[0].Started || !got[0].Ready {
			t.Fatalf("OnChange calls = %+v, want one: started and ready", got)
		}
		if n := e.clock.Waiters(); n != 0 {
			t.Fatalf("%d timers armed after startup with no other probe", n)
		}
	})
}

// TestStartupFailureIsLivenessFailure: a startup probe failing its
// threshold ends the run like a liveness failure; the gated probes never
// ran.
func TestStartupFailureIsLivenessFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.set("startup", execOutcome{code: 2})
		e.exec.set("live", pass)
		r := e.start(Config{
			Startup:  &Spec{Command: []string{"startup"}, FailureThreshold: 2, Period: s},
			Liveness: &Spec{Command: []string{"live"}},
		})
		e.stepTo(s)
		st := r.Status()
		if !st.LivenessFailed || st.Started || st.Ready {
			t.Fatalf("status = %+v, want liveness failed, never started", st)
		}
		if want := "startup probe failed 2 times: exit code 2"; st.Failure != want {
			t.Fatalf("Failure = %q, want %q", st.Failure, want)
		}
		e.wantTimes("startup", 0, s)
		e.stepTo(time.Hour)
		e.wantTimes("live")
		if got := e.ch.get(); len(got) != 1 || !got[0].LivenessFailed {
			t.Fatalf("OnChange calls = %+v, want one with LivenessFailed", got)
		}
	})
}

// TestCommandTimeout: a probe that does not answer within its timeout (on
// the clock, from when it runs) fails.
func TestCommandTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.set("live", execOutcome{hang: true})
		r := e.start(Config{Liveness: &Spec{Command: []string{"live"}, InitialDelay: 3 * s, Timeout: 2 * s, FailureThreshold: 1}})
		e.stepTo(3 * s)
		e.wantTimes("live", 3*s)
		e.wantArmed(5 * s) // the timeout
		e.stepTo(5*s - time.Nanosecond)
		if st := r.Status(); st.LivenessFailed || len(st.Last) != 0 {
			t.Fatalf("before the timeout: %+v", st)
		}
		e.stepTo(5 * s)
		st := r.Status()
		if !st.LivenessFailed || st.Last[Liveness].Message != "timed out after 2s" {
			t.Fatalf("after the timeout: %+v, want failed with \"timed out after 2s\"", st)
		}
		if !st.Last[Liveness].Time.Equal(t0.Add(5 * s)) {
			t.Fatalf("result time = %v, want t0+5s", st.Last[Liveness].Time)
		}
	})
}

// TestOverrunSkipsPeriods: a probe that takes longer than its period does
// not make probes pile up; the next one is at the next period boundary.
func TestOverrunSkipsPeriods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.set("ready", execOutcome{hang: true})
		e.start(Config{Readiness: &Spec{Command: []string{"ready"}, Period: 2 * s, Timeout: 5 * s}})
		e.wantTimes("ready", 0)
		e.stepTo(5 * s) // times out at 5s; 2s and 4s were missed
		e.exec.set("ready", pass)
		e.wantArmed(6 * s)
		e.stepTo(6 * s)
		e.wantTimes("ready", 0, 6*s)
	})
}

// TestStopMidProbe: Stop abandons a probe in flight, waits for the
// goroutines, and nothing is reported after it.
func TestStopMidProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.set("live", execOutcome{hang: true})
		r := e.start(Config{Liveness: &Spec{Command: []string{"live"}, FailureThreshold: 1}})
		e.wantTimes("live", 0)
		r.Stop()
		e.stepTo(time.Hour)
		if st := r.Status(); st.LivenessFailed || len(st.Last) != 0 {
			t.Fatalf("status after Stop = %+v, want nothing recorded", st)
		}
		if n := len(e.ch.get()); n != 0 {
			t.Fatalf("%d OnChange calls after Stop", n)
		}
		if n := e.clock.Waiters(); n != 0 {
			t.Fatalf("%d timers left after Stop", n)
		}
	})
}

// TestExecError: an Exec that cannot run (no such sandbox, command not
// found) is a probe error, as the kubelet's: reported in Last, never
// counted, so even a threshold of 1 does not kill.
func TestExecError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		r := e.start(Config{Liveness: &Spec{Command: []string{"missing"}, FailureThreshold: 1}})
		st := r.Status()
		last := st.Last[Liveness]
		if st.LivenessFailed || !last.Error || last.OK || last.Message != `probe error: running "missing": no such command` {
			t.Fatalf("status = %+v", st)
		}
	})
}

// TestFirstProbeJitter: Jitter delays each probe's first run (from the
// process start, not below the initial delay), then the period runs from
// there; StartedAt in the past makes the initial delay count from it.
func TestFirstProbeJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.set("ready", pass)
		e.exec.set("live", pass)
		var mu sync.Mutex
		var asked []time.Duration
		e.start(Config{
			Readiness: &Spec{Command: []string{"ready"}, Period: 10 * s},
			Liveness:  &Spec{Command: []string{"live"}, InitialDelay: 8 * s, Period: 10 * s},
			Jitter: func(p time.Duration) time.Duration { // called by each probe's goroutine
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, p)
				return p * 3 / 10 // 3s
			},
		})
		e.stepTo(3 * s)
		e.wantTimes("ready", 3*s)
		e.wantTimes("live")
		e.stepTo(8 * s)
		e.wantTimes("live", 8*s) // the initial delay is the later
		e.stepTo(13 * s)
		e.wantTimes("ready", 3*s, 13*s)
		mu.Lock()
		defer mu.Unlock()
		if len(asked) != 2 || asked[0] != 10*s || asked[1] != 10*s {
			t.Fatalf("Jitter asked for %v, want each probe's period", asked)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.set("live", pass)
		e.clock.SetTime(t0.Add(5 * s)) // post_start took 5s
		e.start(Config{Liveness: &Spec{Command: []string{"live"}, InitialDelay: 5 * s, Period: 10 * s}, StartedAt: t0})
		e.wantTimes("live", 5*s) // due at once: the delay counted from the process start
	})
}

// TestTimeoutCountsFromRun: a probe's timeout starts when it runs, not
// when it was due. A probe due during a long post_start (it runs when the
// process is up, past initial delay + timeout) and a probe whose timer
// fired late both run and pass; the kubelet times the probe itself.
func TestTimeoutCountsFromRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.set("live", pass)
		e.clock.SetTime(t0.Add(4 * s)) // post_start took 4s
		r := e.start(Config{Liveness: &Spec{Command: []string{"live"}, Period: s, Timeout: s, FailureThreshold: 1}, StartedAt: t0})
		e.wantTimes("live", 4*s)
		if st := r.Status(); st.LivenessFailed || !st.Last[Liveness].OK {
			t.Fatalf("after a long post_start: %+v, want the probe run and passed", st)
		}
		e.stepTo(7*s + s/2) // the timer due at 5s fires late, at 7.5s
		e.wantTimes("live", 4*s, 7*s+s/2)
		if st := r.Status(); st.LivenessFailed || !st.Last[Liveness].OK {
			t.Fatalf("after a late wake-up: %+v, want the probe run and passed", st)
		}
		e.wantArmed(8 * s) // back on the period's boundaries
	})
}
