package pid1

import (
	"context"
	"errors"
	"time"

	"github.com/supervise-dev/supervise/backoff"
)

// backoffKey is the one key of the crash backoff: exec has one command.
const backoffKey = "exec"

// exit is how one run of the command ended.
type exit struct {
	code int       // reported code: exit code or 128+N, success codes mapped to 0
	at   time.Time // when it was reaped, the backoff's event time
}

// incarnations runs the command, one run at a time. Both ways of running
// it (directly, in a sandbox) implement it; loop holds the restart policy.
type incarnations interface {
	// runOnce starts the command, forwards signals to it until it exited,
	// disposes of what it left behind and reports how it ended. A command
	// that could not be started is an error (a *StartError for 127/126).
	runOnce(ctx context.Context) (exit, error)
	// waitRestart waits until c delivers, answering signals meanwhile; it
	// returns false when a stop was requested instead.
	waitRestart(ctx context.Context, c <-chan time.Time) bool
	// stopRequested reports whether a stop signal came (or ctx ended).
	stopRequested() bool
}

// restartWanted applies the policy to a reported exit code.
func restartWanted(p Restart, code int) bool {
	switch p {
	case RestartAlways:
		return true
	case RestartOnFailure:
		return code != 0
	}
	return false
}

// loop runs the command until the policy says it is done and returns the
// code to exit with. Restarts follow the kubelet's crash backoff counted
// from each exit: the first restart is immediate, then 10s, 20s, … 5m, and
// a run longer than ResetAfter starts the curve over.
func loop(ctx context.Context, cfg *Config, inc incarnations) (int, error) {
	var crash *backoff.Crash // made at the first restart: most runs have none
	clock := cfg.Backoff.Clock
	for restarts := 0; ; restarts++ {
		ex, err := inc.runOnce(ctx)
		if err != nil {
			if se := (*StartError)(nil); errors.As(err, &se) {
				return se.Code, err
			}
			return 1, err
		}
		if inc.stopRequested() || !restartWanted(cfg.Restart, ex.code) {
			cfg.Logger.Debug("done", "exit_code", ex.code, "restarts", restarts)
			return ex.code, nil
		}
		if crash == nil {
			crash = backoff.NewCrash(cfg.Backoff)
		}
		for wait := crash.Decide(backoffKey, ex.at); wait > 0; wait = crash.Decide(backoffKey, ex.at) {
			cfg.Logger.Info("restarting after the crash backoff", "exit_code", ex.code, "delay", wait, "attempt", restarts+1)
			t := clock.NewTimer(wait)
			ok := inc.waitRestart(ctx, t.C())
			t.Stop()
			if !ok {
				return ex.code, nil
			}
		}
		cfg.Logger.Info("restarting", "exit_code", ex.code, "attempt", restarts+1)
	}
}
