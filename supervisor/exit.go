package supervisor

import (
	"context"
	"errors"
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
	s.mu.Lock()
	id := in.procID
	spec := in.spec
	h := in.health
	in.health = nil
	in.ready = false
	// An exit we asked for (stop, restart) is not a crash; one we caused
	// for the program's health is.
	requested := !in.stopDeadline.IsZero() || in.restartRequested
	if h != nil && h.killReason != "" {
		requested = false
		exit.Reason = h.killReason
		if exit.Message == "" {
			exit.Message = in.message
		}
	}
	in.stopDeadline = time.Time{}
	s.mu.Unlock()
	h.stop()
	if id != "" {
		if err := s.rt.Remove(ctx, id); err != nil && !errors.Is(err, proc.ErrNotFound) {
			s.log.Warn("removing process", "program", in.key, "err", err)
		}
	}
	s.log.Info("exited", "program", in.key, "exit_code", exit.Code, "signal", unixsig.Name(exit.Signal), "reason", exit.Reason)
	s.recordExit(in, exit, requested)

	s.runPostStop(ctx, in, spec)
	s.disposeSandbox(ctx, in)
}

// runPostStop runs post_stop after an exit, in a live sandbox; a failure
// is logged and never blocks the restart. Its own timeout bounds it.
func (s *Supervisor) runPostStop(ctx context.Context, in *instance, spec *config.Program) {
	h := spec.Hooks.PostStop
	if h == nil {
		return
	}
	s.freshSandboxIfGone(ctx, in)
	s.mu.Lock()
	last := in.lastExit
	s.mu.Unlock()
	if err := s.runHook(ctx, in, hooks.PostStop, h, programEnv(spec, in, last)); err != nil {
		s.log.Warn("post_stop hook failed", "program", in.key, "err", err)
	}
}

// disposeSandbox makes sure nothing of the ended run survives it:
// leftovers in the sandbox are killed. A sandbox with namespaces is kept
// for a restart that is coming (as the kubelet keeps a pod's): a new one
// would cost its init's start-up and the namespaces' teardown on every
// crash. Any other is deleted.
func (s *Supervisor) disposeSandbox(ctx context.Context, in *instance) {
	s.mu.Lock()
	sid := in.sandboxID
	keep := sid != "" && len(in.sandboxCfg.Namespaces) > 0 && in.goal == goalRun && !s.shuttingDown &&
		(in.afterExit || in.restartRequested)
	if !keep {
		in.sandboxID = ""
	}
	s.mu.Unlock()
	if keep {
		err := s.rt.ResetSandbox(ctx, sid)
		if err == nil {
			return
		}
		s.log.Info("sandbox not reusable; deleting it", "program", in.key, "err", err)
		s.mu.Lock()
		if in.sandboxID == sid {
			in.sandboxID = ""
		}
		s.mu.Unlock()
	}
	if sid != "" {
		if err := s.rt.DeleteSandbox(ctx, sid); err != nil {
			s.log.Warn("deleting sandbox", "program", in.key, "err", err)
		}
	}
}

// recordExit stores exit and applies the restart policy.
func (s *Supervisor) recordExit(in *instance, exit exitInfo, requested bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in.procID, in.pid = "", 0
	e := exit
	in.lastExit = &e
	if e.Reason == string(proc.ReasonOOMKilled) {
		in.oomKills++
	}
	msg := exitMessage(&e)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	s.setStateLocked(in, Exited, msg)
	if s.jobExitLocked(in, requested) {
		return
	}
	if requested || in.goal != goalRun {
		return
	}
	failed := e.failed(in.spec)
	restart := restartWanted(in.spec, &e, failed)
	if s.shuttingDown {
		restart = false
	}
	if restart {
		in.afterExit = true
		return
	}
	in.settled = true
	if s.exitOnCode == nil && (in.spec.Critical || slices.Contains(s.cfg.Supervisor.ExitOn, in.spec.Name)) {
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
		if s.firstFail == nil {
			st := e.status()
			s.firstFail = &st
		}
		s.setStateLocked(in, Failed, msg)
	} else {
		s.setStateLocked(in, Completed, msg)
	}
	if !s.shuttingDown && s.endedForGoodLocked(in.spec.Name) {
		s.stopDependentsLocked(in.spec.Name)
	}
}

// endedForGoodLocked reports whether no instance of program is running or
// meant to run again.
func (s *Supervisor) endedForGoodLocked(program string) bool {
	for _, other := range s.instances {
		if other.spec.Name == program && (other.procID != "" || other.goal == goalRun && !other.settled) {
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
		return "signal " + unixsig.Name(e.Signal)
	case e.Code < 0:
		return e.Reason
	default:
		return "exit " + strconv.Itoa(e.Code)
	}
}

// restartWanted applies the program's restart rules, in order, then its
// restart policy, to an exit the program made on its own.
func restartWanted(spec *config.Program, e *exitInfo, failed bool) bool {
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
