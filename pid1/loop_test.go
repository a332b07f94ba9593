package pid1

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/clock/fakeclock"
)

// fakeRuns plays the command's runs on a fake clock: run i lasts
// durations[i] (0 if not given) and exits with codes[i]; after the last
// code it asks to stop. waitRestart steps the clock to the armed timer.
type fakeRuns struct {
	t          *testing.T
	clock      *fakeclock.Clock
	codes      []int
	durations  []time.Duration
	startErr   error
	stopInWait int // request a stop in this backoff wait (1-based); 0 never

	starts []time.Time
	waits  []time.Duration
	stop   bool
}

func (f *fakeRuns) runOnce(ctx context.Context) (exit, error) {
	if f.startErr != nil {
		return exit{}, f.startErr
	}
	i := len(f.starts)
	f.starts = append(f.starts, f.clock.Now())
	if i < len(f.durations) {
		f.clock.Step(f.durations[i])
	}
	if i == len(f.codes)-1 {
		f.stop = true
	}
	return exit{code: f.codes[i], at: f.clock.Now()}, nil
}

func (f *fakeRuns) waitRestart(ctx context.Context, c <-chan time.Time) bool {
	at, ok := f.clock.NextWakeup()
	if !ok {
		f.t.Fatal("waitRestart without an armed timer")
	}
	f.waits = append(f.waits, at.Sub(f.clock.Now()))
	if len(f.waits) == f.stopInWait {
		f.stop = true
		return false
	}
	f.clock.Step(at.Sub(f.clock.Now()))
	select {
	case <-c:
		return true
	default:
		f.t.Fatal("the backoff timer did not fire at its deadline")
		return false
	}
}

func (f *fakeRuns) stopRequested() bool { return f.stop }

func gaps(starts []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(starts); i++ {
		out = append(out, starts[i].Sub(starts[i-1]))
	}
	return out
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLoopRestartsOnTheKubeletCurve(t *testing.T) {
	s := time.Second
	m := time.Minute
	cases := []struct {
		name      string
		restart   Restart
		codes     []int
		durations []time.Duration
		stopIn    int
		wantCode  int
		wantGaps  []time.Duration // between the starts of runs
	}{
		{
			name: "never", restart: RestartNever, codes: []int{1, 1},
			wantCode: 1, wantGaps: nil,
		},
		{
			name: "always, quick crashes", restart: RestartAlways, codes: []int{1, 1, 1, 1, 1, 1, 1, 1, 1},
			wantCode: 1, wantGaps: []time.Duration{0, 10 * s, 20 * s, 40 * s, 80 * s, 160 * s, 300 * s, 300 * s},
		},
		{
			name: "always restarts a success too", restart: RestartAlways, codes: []int{0, 0, 0},
			wantCode: 0, wantGaps: []time.Duration{0, 10 * s},
		},
		{
			name: "on-failure until it succeeds", restart: RestartOnFailure, codes: []int{2, 2, 0, 2},
			wantCode: 0, wantGaps: []time.Duration{0, 10 * s},
		},
		{
			// The third run outlasts reset_after (2 × max): the next crash
			// restarts at once and the curve starts over.
			name: "a long run resets the backoff", restart: RestartAlways, codes: []int{1, 1, 1, 1, 1},
			durations: []time.Duration{0, 0, 11 * m, 0, 0},
			wantCode:  1, wantGaps: []time.Duration{0, 10 * s, 11 * m, 10 * s},
		},
		{
			name: "a stop during the backoff", restart: RestartAlways, codes: []int{3, 4, 5},
			stopIn: 1, wantCode: 4, wantGaps: []time.Duration{0},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := fakeclock.New(time.Unix(1_000_000, 0))
			f := &fakeRuns{t: t, clock: clock, codes: c.codes, durations: c.durations, stopInWait: c.stopIn}
			cfg := Config{Args: []string{"x"}, Restart: c.restart, Backoff: backoff.CrashConfig{Clock: clock}}
			cfg = cfg.withDefaults()
			code, err := loop(t.Context(), &cfg, f)
			if err != nil || code != c.wantCode {
				t.Errorf("loop = %d, %v; want %d", code, err, c.wantCode)
			}
			if got := gaps(f.starts); !equalDurations(got, c.wantGaps) {
				t.Errorf("gaps between starts %v, want %v", got, c.wantGaps)
			}
		})
	}
}

func TestLoopStartError(t *testing.T) {
	clock := fakeclock.New(time.Unix(0, 0))
	for _, c := range []struct {
		err  error
		code int
	}{
		{&StartError{Code: 127, Err: errors.New("not found")}, 127},
		{&StartError{Code: 126, Err: errors.New("denied")}, 126},
		{errors.New("fork: resource temporarily unavailable"), 1},
	} {
		f := &fakeRuns{t: t, clock: clock, startErr: c.err}
		cfg := Config{Args: []string{"x"}, Restart: RestartAlways, Backoff: backoff.CrashConfig{Clock: clock}}.withDefaults()
		code, err := loop(t.Context(), &cfg, f)
		if code != c.code || !errors.Is(err, c.err) {
			t.Errorf("loop = %d, %v; want %d, %v", code, err, c.code, c.err)
		}
	}
}
