package probe

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
)

// A Runner resumed from another's State goes on where it stood: the
// startup probe passed stays passed (and does not run again), a
// readiness verdict stands, a liveness count toward its threshold goes
// on, and every probe runs next at the time it was due, not at once.
func TestResumeGoesOnWhereItStood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.set("startup", pass)
		e.exec.set("ready", pass)
		e.exec.set("live", fail)
		cfg := func() Config {
			return Config{
				Startup:   &Spec{Command: []string{"startup"}, Period: 5 * s},
				Readiness: &Spec{Command: []string{"ready"}, Period: 5 * s, FailureThreshold: 3},
				Liveness:  &Spec{Command: []string{"live"}, Period: 10 * s, FailureThreshold: 3},
			}
		}
		old := e.start(cfg())
		e.stepTo(5 * s)
		e.stepTo(10 * s) // live failed at 0 and 10; ready passed at 0, 5, 10
		e.exec.set("ready", fail)
		e.stepTo(15 * s) // ready: 1 failure of 3
		st := old.State()
		old.Stop()
		// Across JSON, as across the exec.
		data, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		var back State
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if err := back.Check(); err != nil {
			t.Fatal(err)
		}
		e.stepTo(17 * s) // the exec takes its time
		c := cfg()
		c.Resume = &back
		r := e.start(c)
		if got := r.Status(); !got.Started || !got.Ready || got.LivenessFailed {
			t.Fatalf("resumed status %+v, want started and ready", got)
		}
		if got := r.Status().Last[Liveness]; got.OK || got.Time != t0.Add(10*s) {
			t.Fatalf("resumed last liveness result %+v, want the failure of 10s", got)
		}
		e.wantTimes("startup", 0)
		e.wantTimes("live", 0, 10*s) // nothing at once on resume
		e.wantTimes("ready", 0, 5*s, 10*s, 15*s)
		e.stepTo(20 * s) // live: third failure; ready: second
		got := r.Status()
		if !got.LivenessFailed || !strings.Contains(got.Failure, "failed 3 times") {
			t.Fatalf("status %+v, want the liveness failure at its third failure in a row", got)
		}
		e.wantTimes("startup", 0)
	})
}

// A State from another binary is checked before a Runner takes it.
func TestStateCheckRefuses(t *testing.T) {
	for _, st := range []State{
		{Counts: map[string]Count{"sideways": {}}},
		{Counts: map[string]Count{Liveness: {Run: -1}}},
		{Last: map[string]Result{Readiness: {Message: strings.Repeat("x", 1<<20)}}},
		{FailedProbe: "sideways"},
	} {
		if err := st.Check(); err == nil {
			t.Errorf("Check took %+v", st)
		}
	}
}
