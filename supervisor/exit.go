package supervisor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/hooks"
	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/proc"
)

// What an exit means: the last exit recorded, the restart policy, the end
// for good, and the hooks after it.

// handleExit removes the exited process, runs post_stop and records the
// exit.
func (s *Supervisor) handleExit(ctx context.Context, in *instance, exit exitInfo) {
	id, h := in.procID, in.health
	s.mu.Lock()
	spec, streams := in.spec, in.logs
	in.health = nil
	in.ready = false
	// An exit we asked for (stop, restart) is not a crash; one we caused
	// for the program's health is.
	requested := !in.run.stopDeadline.IsZero() || in.restartRequested || id != "" && in.stopSignalled == id
	in.stopSignalled = ""
	if h != nil && h.killReason != "" {
		requested = false
		exit.Reason = h.killReason
		if exit.Message == "" {
			exit.Message = in.message
		}
		if h.killReason == ReasonHookError {
			// Killed for its failed post_start: the run never started,
			// and is recorded as the start's failure.
			exit = exitInfo{Code: -1, Reason: ReasonHookError, FinishedAt: exit.FinishedAt, Message: h.killCause}
		}
	}
	in.run.stopDeadline = time.Time{}
	s.mu.Unlock()
	h.stop()
	if id != "" {
		if err := s.rt.Remove(ctx, id); err != nil && !errors.Is(err, proc.ErrNotFound) {
			s.log.Warn("removing process", "program", in.key, "err", err)
		}
	}
	s.log.Info("exited", "program", in.key, "exit_code", exit.Code, "signal", unixsig.Name(exit.Signal), "reason", exit.Reason)
	s.recordExit(in, exit, requested)

	s.runPostStop(ctx, in, spec, streams)
	s.disposeSandbox(ctx, in)
}

// runPostStop runs post_stop after an exit, in a live sandbox; a failure
// is logged and never blocks the restart. Its own timeout bounds it.
func (s *Supervisor) runPostStop(ctx context.Context, in *instance, spec *config.Program, streams programLogs) {
	h := spec.Hooks.PostStop
	if h == nil {
		return
	}
	s.freshSandboxIfGone(ctx, in, spec)
	if err := s.runHook(ctx, in, spec, streams, hooks.PostStop, h, programEnv(spec, in, in.lastExit)); err != nil {
		s.log.Warn("post_stop hook failed", "program", in.key, "err", err)
	}
}

// disposeSandbox makes sure nothing of the ended run survives it:
// leftovers in the sandbox are killed. A sandbox with namespaces is kept
// for a restart that may come (as the kubelet keeps a pod's): a new one
// would cost its init's start-up and the namespaces' teardown on every
// crash. Any other is deleted.
func (s *Supervisor) disposeSandbox(ctx context.Context, in *instance) {
	s.mu.Lock()
	keep := len(in.run.sandboxCfg.Namespaces) > 0 && in.goal == goalRun && !s.shuttingDown &&
		(in.afterExit || in.restartRequested)
	s.mu.Unlock()
	if err := s.releaseSandbox(ctx, in, keep); err != nil {
		s.log.Warn("deleting sandbox", "program", in.key, "err", err)
	}
}

// releaseSandbox is where an instance's sandbox ends: reset for the next
// run when keep (and the reset works), deleted otherwise. A sandbox that
// cannot be deleted (out of descriptors, say) stays the instance's, so
// that the next start, stop or the shutdown tries again: forgotten, its
// cgroup would stay forever.
func (s *Supervisor) releaseSandbox(ctx context.Context, in *instance, keep bool) error {
	sid := in.sandboxID
	if sid == "" {
		return nil
	}
	if keep {
		err := s.rt.ResetSandbox(ctx, sid)
		if err == nil {
			return nil
		}
		s.log.Info("sandbox not reusable; deleting it", "program", in.key, "err", err)
	}
	if err := s.rt.DeleteSandbox(ctx, sid); err != nil && !errors.Is(err, proc.ErrNotFound) {
		return fmt.Errorf("deleting sandbox of %q: %w", in.key, err)
	}
	s.mu.Lock()
	in.sandboxID = ""
	s.mu.Unlock()
	return nil
}

// recordExit stores exit. An exit the program made on its own (not asked
// for, nor caused by a stop) is marked afterExit: decideRun then says
// whether it restarts, and when, or ends for good (stepSettle).
func (s *Supervisor) recordExit(in *instance, exit exitInfo, requested bool) {
	s.noteRunEnd(in, exit, requested)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.untrackProcLocked(in.procID, in)
	in.procID, in.pid = "", 0
	e := exit
	in.lastExit = &e
	if e.Reason == string(proc.ReasonOOMKilled) {
		in.oomKills++
	}
	s.setStateLocked(in, Exited, exitText(&e))
	s.jobRunEndedLocked(in, requested)
	if !requested && in.goal == goalRun {
		in.afterExit = true
	}
}

// settleLocked ends in for good after its last exit, as decideRun said
// (stepSettle): Completed or Failed, and what that entails (exit_on,
// critical, the dependents of a program that is gone).
func (s *Supervisor) settleLocked(in *instance) {
	e := in.lastExit
	in.afterExit = false
	in.settled = true
	failed := e.failed(in.spec)
	// A job's run ended, not the job: it is neither the end exit_on waits
	// for nor supervise's exit status (schedule.go).
	job := in.job != nil
	if !job && s.exitOnCode == nil && (in.spec.Critical || slices.Contains(s.cfg.Supervisor.ExitOn, in.spec.Name)) {
		// exit_on or critical: this program's end ends the supervisor, with
		// its status.
		st := 0
		if failed {
			st = e.status()
		}
		s.exitOnCode = &st
		s.log.Info("exit_on program ended; stopping everything", "program", in.key, "exit_code", st)
		s.stopOnce.Do(func() { close(s.stopReq) })
	}
	if failed {
		if s.firstFail == nil && !job {
			st := e.status()
			s.firstFail = &st
		}
		s.setStateLocked(in, Failed, exitText(e))
	} else {
		s.setStateLocked(in, Completed, exitText(e))
	}
	if !s.shuttingDown && s.endedForGoodLocked(in.spec.Name) {
		s.stopDependentsLocked(in.spec.Name)
	}
	s.runEndedForGoodLocked(in) // a job's run beside its instance goes (schedule.go)
}

// exitText is an exit as the state's message shows it.
func exitText(e *exitInfo) string {
	msg := exitMessage(e)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// endedForGoodLocked reports whether no instance of program is running or
// meant to run again.
func (s *Supervisor) endedForGoodLocked(program string) bool {
	for _, other := range s.instancesOfLocked(program) {
		if other.procID != "" || other.goal == goalRun && !endedLocked(other) {
			return false
		}
	}
	return true
}

func exitMessage(e *exitInfo) string {
	switch {
	case healthKill(e.Reason):
		return e.Reason
	case e.Reason == string(proc.ReasonOOMKilled):
		return string(proc.ReasonOOMKilled)
	case e.Signal != 0:
		return "exit " + strconv.Itoa(128+int(e.Signal)) + " (SIG" + unixsig.Name(e.Signal) + ")" // the kubelet's and shells' code
	case e.Code < 0:
		return e.Reason
	default:
		return "exit " + strconv.Itoa(e.Code)
	}
}

// restartWanted applies the program's restart rules, in order, then its
// restart policy, to an exit the program made on its own: an input of
// decideRun (runView.policyRestart), which decides.
func restartWanted(spec *config.Program, e *exitInfo, failed bool) bool {
	if e.Reason == ReasonMaxRuntime {
		return false // a job's run past max_runtime: its time is over
	}
	status := e.status()
	for _, r := range spec.RestartRules {
		if r.Match(status) {
			return r.Action == config.RuleRestart
		}
	}
	switch spec.Restart {
	case config.RestartAlways:
		return true
	case config.RestartOnFailure:
		return failed
	}
	return false
}
