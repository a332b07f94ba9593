package supervisor

import (
	"context"
	"fmt"
	"reflect"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/hooks"
	"github.com/supervise-dev/supervise/proc"
)

// The start sequence of an instance: sandbox, pre_start, the process,
// post_start; and what a start that fails leaves behind.

// start runs the start sequence: sandbox, pre_start, create+start,
// post_start. A failure in any step counts as a crash (the backoff applies)
// rather than a reconcile error: retrying at the queue's pace would ignore
// the program's backoff settings.
func (s *Supervisor) start(ctx context.Context, in *instance) error {
	s.mu.Lock()
	spec, streams := in.spec, in.logs // a reload replaces both under the lock
	s.setStateLocked(in, Starting, "")
	s.mu.Unlock()
	last := in.lastExit

	sid, err := s.ensureSandbox(ctx, in, spec)
	if err != nil {
		return s.startFailed(ctx, in, ReasonStartError, err)
	}
	env := programEnv(spec, in, last)
	if h := spec.Hooks.PreStart; h != nil {
		if err := s.runHook(ctx, in, spec, streams, hooks.PreStart, h, env); err != nil {
			return s.startFailed(ctx, in, ReasonHookError, err)
		}
	}
	if s.startCancelled(in) {
		// A stop (or the shutdown) came during the sequence: what is left
		// of it is not done. The stop queued the key again; its reconcile
		// settles the state and removes the sandbox.
		s.log.Info("start cancelled by a stop", "program", in.key)
		return nil
	}
	h, env, err := s.prepareHealth(in, spec, env)
	if err != nil {
		return s.startFailed(ctx, in, ReasonStartError, fmt.Errorf("creating the notify socket: %w", err))
	}
	st, err := s.launch(ctx, in, spec, streams, sid, env, h)
	if err != nil {
		h.stop()
		return s.startFailed(ctx, in, ReasonStartError, err)
	}
	s.mu.Lock()
	in.health = h
	in.startingID = ""
	in.procID, in.pid, in.startedAt = st.ID, st.Pid, st.StartedAt
	in.procSpec = spec
	if in.startedAt.IsZero() {
		in.startedAt = s.clock.Now()
	}
	s.mu.Unlock()

	if err := s.postStart(ctx, in, spec, streams, env); err != nil {
		// The process runs: it ends through the stop path (pre_stop, the
		// signal, the grace, SIGKILL) as for a failed liveness probe, and
		// its exit, as any other, brings the key back.
		s.log.Error("start failed", "program", in.key, "reason", ReasonHookError, "err", err)
		s.mu.Lock()
		h.killReason, h.killCause = ReasonHookError, err.Error()
		s.mu.Unlock()
		s.queue.Add(in.key)
		return nil
	}
	s.mu.Lock()
	if in.procID == st.ID {
		s.setStateLocked(in, Running, "")
		s.startHealth(in, h, sid, env)
		s.checkHealthLocked(in)
		s.startDependentsLocked(spec.Name)
	}
	s.mu.Unlock()
	s.log.Info("started", "program", in.key, "pid", st.Pid)
	return nil
}

// ensureSandbox returns the sandbox in's next process runs in: the kept
// one when it still fits the spec and its init lives, else a new one.
func (s *Supervisor) ensureSandbox(ctx context.Context, in *instance, spec *config.Program) (string, error) {
	sid := in.sandboxID
	want := sandboxConfig(spec, in.key)
	if sid != "" && s.reusable(sid, in, want) {
		return sid, nil
	}
	if err := s.releaseSandbox(ctx, in, false); err != nil {
		s.log.Warn("deleting a sandbox that does not fit", "program", in.key, "err", err)
	}
	sid, err := s.rt.CreateSandbox(ctx, want)
	if err != nil {
		return "", fmt.Errorf("creating sandbox: %w", err)
	}
	in.run.sandboxCfg = want
	s.mu.Lock()
	in.sandboxID = sid
	s.mu.Unlock()
	return sid, nil
}

// launch creates and starts the process in sandbox sid with its output
// pipes and h's descriptors, and returns its status. On failure nothing of
// the process is left.
func (s *Supervisor) launch(ctx context.Context, in *instance, spec *config.Program, streams programLogs, sid string, env []string, h *health) (proc.ProcessStatus, error) {
	stdout, stderr, err := streams.pipes()
	if err != nil {
		return proc.ProcessStatus{}, fmt.Errorf("creating log pipes: %w", err)
	}
	pcfg := processConfig(spec, env)
	pcfg.Stdout, pcfg.Stderr = stdout, stderr
	pcfg.ExtraFiles = h.childFiles(spec)
	closeSockets, err := s.listen.addSockets(spec, &pcfg)
	defer closeSockets()
	id := ""
	if err == nil {
		id, err = s.rt.Create(ctx, sid, pcfg)
	}
	if err == nil {
		// The exit may be reported before Start returns: watchExits
		// must know whose it is.
		s.mu.Lock()
		in.startingID = id
		s.trackProcLocked(id, in)
		s.mu.Unlock()
		err = s.rt.Start(ctx, id)
	}
	// The child has its copies now; ours must go, or the pumps (and the
	// notification fd's reader) never see EOF.
	stdout.Close()
	if stderr != stdout {
		stderr.Close()
	}
	h.started()
	if err != nil {
		s.mu.Lock()
		in.startingID = ""
		s.untrackProcLocked(id, in)
		s.mu.Unlock()
		if id != "" {
			_ = s.rt.Remove(ctx, id)
		}
		return proc.ProcessStatus{}, err
	}
	st, err := s.rt.Status(id)
	if err != nil { // cannot happen: proc knows what it started
		s.log.Warn("status of a started process", "program", in.key, "err", err)
		st = proc.ProcessStatus{ID: id}
	}
	st.ID = id
	return st, nil
}

// postStart runs the post_start hook, if any.
func (s *Supervisor) postStart(ctx context.Context, in *instance, spec *config.Program, streams programLogs, env []string) error {
	h := spec.Hooks.PostStart
	if h == nil {
		return nil
	}
	return s.runHook(ctx, in, spec, streams, hooks.PostStart, h, env)
}

// startCancelled reports whether the instance is no longer meant to run.
func (s *Supervisor) startCancelled(in *instance) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return in.goal != goalRun || s.shuttingDown
}

// startFailed records a start that failed before its process ran as a
// crash, so the program's backoff decides when the next try comes. (A
// start that fails once its process runs ends through the stop path.)
func (s *Supervisor) startFailed(ctx context.Context, in *instance, reason string, cause error) error {
	s.log.Error("start failed", "program", in.key, "reason", reason, "err", cause)
	s.recordExit(in, exitInfo{Code: -1, Reason: reason, FinishedAt: s.clock.Now(), Message: cause.Error()}, false)
	s.disposeSandbox(ctx, in)
	s.queue.Add(in.key)
	return nil
}

// reusable says whether the kept sandbox sid can take in's next process:
// created as want asks, and its init alive.
func (s *Supervisor) reusable(sid string, in *instance, want proc.SandboxConfig) bool {
	if !reflect.DeepEqual(in.run.sandboxCfg, want) {
		return false
	}
	st, err := s.rt.SandboxStatus(sid)
	return err == nil && st.State == proc.SandboxReady
}

// freshSandboxIfGone replaces the sandbox of in when its init has died: a
// pid namespace ends with its PID 1, so a post_stop hook gets a new sandbox
// of the same kind (same namespaces, limits and identity) to run in.
func (s *Supervisor) freshSandboxIfGone(ctx context.Context, in *instance, spec *config.Program) {
	if sid := in.sandboxID; sid != "" {
		if st, err := s.rt.SandboxStatus(sid); err == nil && st.State == proc.SandboxReady {
			return
		}
		_ = s.releaseSandbox(ctx, in, false)
	}
	cfg := sandboxConfig(spec, in.key)
	newID, err := s.rt.CreateSandbox(ctx, cfg)
	if err != nil {
		s.log.Warn("creating a sandbox for post_stop", "program", in.key, "err", err)
		newID = ""
	}
	in.run.sandboxCfg = cfg
	s.mu.Lock()
	in.sandboxID = newID
	s.mu.Unlock()
}
