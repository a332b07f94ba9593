package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/hooks"
	"github.com/supervise-dev/supervise/proc"
)

// reconcile closes the gap between what key should be and what it is. Each
// step is a blocking call into proc or hooks; the queue guarantees no other
// worker holds key meanwhile. An error sends key back rate-limited.
func (s *Supervisor) reconcile(ctx context.Context, key string) error {
	s.mu.Lock()
	in := s.instances[key]
	if in == nil {
		s.mu.Unlock()
		return nil
	}
	pending := in.pendingExit
	in.pendingExit = nil
	if pending != nil && pending.procID != in.procID {
		pending = nil // an exit we already handled inline (after Stop)
	}
	s.mu.Unlock()

	if pending != nil {
		s.handleExit(ctx, in, pending.exit)
	}

	s.mu.Lock()
	g := in.goal
	s.mu.Unlock()
	switch g {
	case goalStop:
		_, err := s.reconcileStop(ctx, in, Stopped)
		return err
	case goalRemove:
		// Forgotten only once its process is gone: the exit, or the end
		// of its grace, brings the key back; forgetting it earlier left
		// the process running and its sandbox behind (found by the soak).
		if done, err := s.reconcileStop(ctx, in, Stopped); err != nil || !done {
			return err
		}
		s.mu.Lock()
		if in.goal == goalRemove && s.instances[key] == in {
			delete(s.instances, key)
			s.events.add(key, string(in.state), "Removed", "")
			s.bg.Go(func() { s.logs.remove(key) })
			s.checkDoneLocked()
		}
		s.mu.Unlock()
		return nil
	default:
		return s.reconcileRun(ctx, in)
	}
}

// reconcileStop drives in down to final; done is false while its process
// is still stopping.
func (s *Supervisor) reconcileStop(ctx context.Context, in *instance, final State) (done bool, err error) {
	if s.stopping(ctx, in) {
		return false, nil // the exit, or the end of the grace period, brings the key back
	}
	s.mu.Lock()
	sid := in.sandboxID
	in.sandboxID = ""
	if in.state != final && (in.state != Completed && in.state != Failed || in.goal == goalRemove) {
		in.nextStart = time.Time{}
		s.setStateLocked(in, final, "")
	}
	s.checkDoneLocked()
	s.mu.Unlock()
	if sid != "" {
		if err := s.rt.DeleteSandbox(ctx, sid); err != nil {
			return true, fmt.Errorf("deleting sandbox of %q: %w", in.key, err)
		}
	}
	return true, nil
}

func (s *Supervisor) reconcileRun(ctx context.Context, in *instance) error {
	s.mu.Lock()
	restart := in.restartRequested
	s.mu.Unlock()
	if restart && s.stopping(ctx, in) {
		return nil
	}
	s.mu.Lock()
	running := in.procID != ""
	kill := running && s.checkHealthLocked(in)
	if !running {
		in.restartRequested = false
	}
	s.mu.Unlock()
	if kill {
		s.stopping(ctx, in) // ends as a crash: the health's reason, the backoff
		return nil
	}
	if running {
		return nil
	}

	s.mu.Lock()
	if in.settled && !restart {
		s.mu.Unlock()
		return nil
	}
	in.settled = false
	if s.shuttingDown {
		s.mu.Unlock()
		return nil
	}
	if dep := s.unmetDepLocked(in); dep != "" {
		s.setStateLocked(in, Waiting, "waiting for "+dep)
		s.mu.Unlock()
		return nil
	}
	if in.afterExit && !restart {
		wait := in.backoff.Decide(in.key, in.lastExit.FinishedAt)
		if wait > 0 {
			in.nextStart = s.clock.Now().Add(wait)
			s.setStateLocked(in, CrashLoopBackOff, "back-off "+in.backoff.Get(in.key).String())
			s.queue.AddAfter(in.key, wait)
			s.mu.Unlock()
			return nil
		}
	}
	// As the kubelet's restartCount: restarts after an exit of the
	// program's own, not the ones asked for (supervisectl restart).
	if in.afterExit {
		in.restarts++
	}
	in.afterExit = false
	in.nextStart = time.Time{}
	s.mu.Unlock()

	return s.start(ctx, in)
}

// start runs the start sequence: sandbox, pre_start, create+start,
// post_start. A failure in any step counts as a crash (the backoff applies)
// rather than a reconcile error: retrying at the queue's pace would ignore
// the program's backoff settings.
func (s *Supervisor) start(ctx context.Context, in *instance) error {
	s.mu.Lock()
	spec := in.spec
	s.setStateLocked(in, Starting, "")
	sid := in.sandboxID
	last := in.lastExit
	s.mu.Unlock()

	want := sandboxConfig(spec, in.key)
	if sid != "" && !s.reusable(sid, in, want) {
		s.mu.Lock()
		in.sandboxID = ""
		s.mu.Unlock()
		if err := s.rt.DeleteSandbox(ctx, sid); err != nil && !errors.Is(err, proc.ErrNotFound) {
			s.log.Warn("deleting sandbox", "program", in.key, "err", err)
		}
		sid = ""
	}
	if sid == "" {
		var err error
		sid, err = s.rt.CreateSandbox(ctx, want)
		if err != nil {
			return s.startFailed(ctx, in, "", ReasonStartError, fmt.Errorf("creating sandbox: %w", err))
		}
		s.mu.Lock()
		in.sandboxID, in.sandboxCfg = sid, want
		s.mu.Unlock()
	}

	env := programEnv(spec, in, last)
	if h := spec.Hooks.PreStart; h != nil {
		if err := s.runHook(ctx, in, hooks.PreStart, h, env); err != nil {
			return s.startFailed(ctx, in, "", ReasonHookError, err)
		}
	}
	if s.startCancelled(in) {
		// A stop (or the shutdown) came during the sequence: what is left
		// of it is not done. The stop queued the key again; its reconcile
		// settles the state and removes the sandbox.
		s.log.Info("start cancelled by a stop", "program", in.key)
		return nil
	}

	h, env, err := s.prepareHealth(in, env)
	if err != nil {
		return s.startFailed(ctx, in, "", ReasonStartError, fmt.Errorf("creating the notify socket: %w", err))
	}
	stdout, stderr, err := in.logs.pipes()
	if err != nil {
		h.stop()
		return s.startFailed(ctx, in, "", ReasonStartError, fmt.Errorf("creating log pipes: %w", err))
	}
	pcfg := processConfig(spec, env)
	pcfg.Stdout, pcfg.Stderr = stdout, stderr
	pcfg.ExtraFiles = h.childFiles(spec)
	id, err := s.rt.Create(ctx, sid, pcfg)
	if err == nil {
		// The exit may be reported before Start returns: watchExits
		// must know whose it is.
		s.mu.Lock()
		in.startingID = id
		s.mu.Unlock()
		err = s.rt.Start(ctx, id)
	}
	// The child has its copies now; ours must go, or the pumps (and the
	// notification fd's reader) never see EOF.
	stdout.Close()
	stderr.Close()
	h.started()
	if err != nil {
		s.mu.Lock()
		in.startingID = ""
		s.mu.Unlock()
		h.stop()
		if id != "" {
			_ = s.rt.Remove(ctx, id)
		}
		return s.startFailed(ctx, in, "", ReasonStartError, err)
	}
	st, err := s.rt.Status(id)
	if err != nil { // cannot happen: proc knows what it started
		st = proc.ProcessStatus{ID: id}
		s.log.Warn("status of a started process", "program", in.key, "err", err)
	}
	s.mu.Lock()
	in.health = h
	in.startingID = ""
	in.procID, in.pid, in.startedAt = id, st.Pid, st.StartedAt
	if in.startedAt.IsZero() {
		in.startedAt = s.clock.Now()
	}
	s.mu.Unlock()

	if h := spec.Hooks.PostStart; h != nil {
		if err := s.runHook(ctx, in, hooks.PostStart, h, env); err != nil {
			return s.startFailed(ctx, in, id, ReasonHookError, err)
		}
	}
	s.mu.Lock()
	if in.procID == id {
		s.setStateLocked(in, Running, "")
		s.startHealth(in, h, sid, env)
		s.checkHealthLocked(in)
		s.startDependentsLocked(spec.Name)
	}
	s.mu.Unlock()
	s.log.Info("started", "program", in.key, "pid", st.Pid)
	return nil
}

// startCancelled reports whether the instance is no longer meant to run.
func (s *Supervisor) startCancelled(in *instance) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return in.goal != goalRun || s.shuttingDown
}

// startFailed records a start that did not get to Running as a crash, so
// the program's backoff decides when the next try comes.
func (s *Supervisor) startFailed(ctx context.Context, in *instance, procID, reason string, cause error) error {
	s.log.Error("start failed", "program", in.key, "reason", reason, "err", cause)
	if procID != "" {
		s.mu.Lock()
		grace := in.spec.StopTimeout
		s.mu.Unlock()
		_ = s.rt.Stop(ctx, procID, grace)
		s.mu.Lock()
		in.procID, in.pid = "", 0 // the exit we cause here is the hook's failure
		s.mu.Unlock()
		_ = s.rt.Remove(ctx, procID)
	}
	s.recordExit(in, exitInfo{Code: -1, Reason: reason, FinishedAt: s.clock.Now(), Message: cause.Error()}, false)
	s.mu.Lock()
	sid := in.sandboxID
	in.sandboxID = ""
	s.mu.Unlock()
	if sid != "" {
		if err := s.rt.DeleteSandbox(ctx, sid); err != nil && !errors.Is(err, proc.ErrNotFound) {
			// Out of descriptors, say: what failed the start fails this
			// too. Forgotten, the sandbox's cgroup would stay forever;
			// kept, the next start takes or deletes it, a stop deletes it.
			s.log.Warn("deleting the sandbox of a failed start; keeping it for the next try", "program", in.key, "err", err)
			s.mu.Lock()
			if in.sandboxID == "" {
				in.sandboxID = sid
			}
			s.mu.Unlock()
		}
	}
	s.queue.Add(in.key)
	return nil
}

// stopping drives a stop without holding a worker for the grace period:
// the first call runs pre_stop and sends the stop signal, then the key comes
// back when the process exits (an exit event) or when the grace period ends
// (AddAfter), and then SIGKILL goes to the sandbox. pre_stop's time comes out
// of stop_timeout, as in the kubelet. It reports whether a process is still
// there to wait for.
func (s *Supervisor) stopping(ctx context.Context, in *instance) bool {
	s.mu.Lock()
	spec, id, sid, last := in.spec, in.procID, in.sandboxID, in.lastExit
	deadline := in.stopDeadline
	s.mu.Unlock()
	if id == "" {
		return false
	}
	if deadline.IsZero() { // the stop begins
		grace := spec.StopTimeout
		if grace <= 0 {
			grace = 10 * time.Second
		}
		deadline = s.clock.Now().Add(grace)
		s.mu.Lock()
		in.stopDeadline = deadline
		health := in.health
		s.mu.Unlock()
		// Nothing asks a stopping program about its health: a probe
		// would only disturb its shutdown, and no verdict matters now.
		// Done before it shows Stopping, which the stop's waiters see.
		health.stopWatching()
		s.mu.Lock()
		s.setStateLocked(in, Stopping, "")
		s.mu.Unlock()
		if h := spec.Hooks.PreStop; h != nil && sid != "" {
			hs := *h
			if hs.Timeout <= 0 || hs.Timeout > grace {
				hs.Timeout = grace
			}
			if err := s.runHook(ctx, in, hooks.PreStop, &hs, programEnv(spec, in, last)); err != nil {
				s.log.Warn("pre_stop hook failed; stopping anyway", "program", in.key, "err", err)
			}
		}
		sig := spec.StopSignal
		if sig == 0 {
			sig = syscall.SIGTERM
		}
		if err := s.rt.Signal(id, sig); err != nil && !errors.Is(err, proc.ErrNotFound) && !errors.Is(err, proc.ErrProcessDone) {
			s.log.Warn("sending the stop signal", "program", in.key, "err", err)
		}
	}
	if remaining := deadline.Sub(s.clock.Now()); remaining > 0 {
		s.queue.AddAfter(in.key, remaining)
		return true
	}
	// Grace is over: SIGKILL to everything in the sandbox; proc returns
	// once the process has exited.
	s.log.Warn("stop timeout reached; killing", "program", in.key, "stop_timeout", spec.StopTimeout)
	s.mu.Lock()
	s.forcedLocked(in.key)
	s.mu.Unlock()
	if err := s.rt.Stop(ctx, id, 0); err != nil && !errors.Is(err, proc.ErrNotFound) {
		s.log.Warn("killing", "program", in.key, "err", err)
	}
	exit := exitInfo{Code: -1, Signal: syscall.SIGKILL, Reason: "Signaled", FinishedAt: s.clock.Now()}
	if st, err := s.rt.Status(id); err == nil && st.State == proc.StateExited {
		exit = exitInfo{Code: st.ExitCode, Signal: st.Signal, Reason: string(st.Reason), FinishedAt: st.FinishedAt}
	}
	s.handleExit(ctx, in, exit)
	return false
}

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
	s.log.Info("exited", "program", in.key, "exit_code", exit.Code, "signal", signalName(exit.Signal), "reason", exit.Reason)
	s.recordExit(in, exit, requested)

	// post_stop runs after every exit; a failure is logged and never blocks
	// the restart. Its own timeout bounds it.
	if h := spec.Hooks.PostStop; h != nil {
		s.freshSandboxIfGone(ctx, in)
		s.mu.Lock()
		last := in.lastExit
		s.mu.Unlock()
		if err := s.runHook(ctx, in, hooks.PostStop, h, programEnv(spec, in, last)); err != nil {
			s.log.Warn("post_stop hook failed", "program", in.key, "err", err)
		}
	}
	// Nothing of this run survives it: leftovers in the sandbox are killed.
	// A sandbox with namespaces is kept for a restart that is coming (as
	// the kubelet keeps a pod's): a new one would cost its init's start-up
	// and the namespaces' teardown on every crash. Any other is deleted.
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

// reusable says whether the kept sandbox sid can take in's next process:
// created as want asks, and its init alive.
func (s *Supervisor) reusable(sid string, in *instance, want proc.SandboxConfig) bool {
	s.mu.Lock()
	have := in.sandboxCfg
	s.mu.Unlock()
	if !reflect.DeepEqual(have, want) {
		return false
	}
	st, err := s.rt.SandboxStatus(sid)
	return err == nil && st.State == proc.SandboxReady
}

// freshSandboxIfGone replaces the sandbox of in when its init has died: a
// pid namespace ends with its PID 1, so a post_stop hook gets a new sandbox
// of the same kind (same namespaces, limits and identity) to run in.
func (s *Supervisor) freshSandboxIfGone(ctx context.Context, in *instance) {
	s.mu.Lock()
	sid, spec := in.sandboxID, in.spec
	s.mu.Unlock()
	if sid != "" {
		if st, err := s.rt.SandboxStatus(sid); err == nil && st.State == proc.SandboxReady {
			return
		}
		_ = s.rt.DeleteSandbox(ctx, sid)
	}
	cfg := sandboxConfig(spec, in.key)
	newID, err := s.rt.CreateSandbox(ctx, cfg)
	if err != nil {
		s.log.Warn("creating a sandbox for post_stop", "program", in.key, "err", err)
		newID = ""
	}
	s.mu.Lock()
	in.sandboxID, in.sandboxCfg = newID, cfg
	s.mu.Unlock()
}

// recordExit stores exit and applies the restart policy.
func (s *Supervisor) recordExit(in *instance, exit exitInfo, requested bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in.procID, in.pid = "", 0
	e := exit
	in.lastExit = &e
	msg := exitMessage(&e)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	s.setStateLocked(in, Exited, msg)
	if requested || in.goal != goalRun {
		return
	}
	failed := e.failed(in.spec)
	restart := false
	switch in.spec.Restart {
	case config.RestartAlways:
		restart = true
	case config.RestartOnFailure:
		restart = failed
	}
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
	case e.Reason == ReasonLivenessProbeFailed || e.Reason == ReasonWatchdogTimeout:
		return e.Reason
	case e.Reason == "OOMKilled":
		return "OOMKilled"
	case e.Signal != 0:
		return "signal " + signalName(e.Signal)
	case e.Code < 0:
		return e.Reason
	default:
		return "exit " + strconv.Itoa(e.Code)
	}
}

func (s *Supervisor) runHook(ctx context.Context, in *instance, phase hooks.Phase, h *config.Hook, env []string) error {
	s.mu.Lock()
	sid := in.sandboxID
	spec := in.spec
	s.mu.Unlock()
	spec2 := hooks.Spec{Command: h.Command, Timeout: h.Timeout}
	if h.HTTP != nil {
		spec2.HTTP = &hooks.HTTP{URL: h.HTTP.URL, Method: h.HTTP.Method, Headers: h.HTTP.Headers, ExpectStatus: h.HTTP.ExpectStatus}
	}
	out := in.logs.hookWriter(string(phase))
	defer out.Close()
	call := hooks.Call{
		Phase:     phase,
		SandboxID: sid,
		Exec:      execConfig(spec, append(env, "SUPERVISE_HOOK="+string(phase))),
		Output:    out,
	}
	s.log.Info("hook", "program", in.key, "hook", phase)
	return s.hooks.Run(ctx, spec2, call)
}

// ownNotifyVar are what systemd (or a parent supervisor) gave us to report
// our own readiness: a program that inherited them could speak for us, and
// an sd_notify program must find only its own socket.
var ownNotifyVar = map[string]bool{"NOTIFY_SOCKET": true, "WATCHDOG_USEC": true, "WATCHDOG_PID": true}

// programEnv is the environment of a program's process and hooks: the
// supervisor's own, the program's env over it, then ours over both. Each
// name appears once: getenv takes the first of duplicates, and the last
// word must win.
func programEnv(spec *config.Program, in *instance, last *exitInfo) []string {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && !ownNotifyVar[k] {
			set(k, v)
		}
	}
	for k, v := range spec.Env {
		set(k, v)
	}
	if spec.Port != 0 { // Procfile mode: foreman's PORT, one per instance
		set("PORT", strconv.Itoa(spec.Port+in.index))
	}
	set("SUPERVISE_PROGRAM", spec.Name)
	set("SUPERVISE_INSTANCE", strconv.Itoa(in.index))
	if last != nil {
		// The shell's view of the exit: 128+N for a signal.
		set("SUPERVISE_EXIT_CODE", strconv.Itoa(last.status()))
		set("SUPERVISE_EXIT_SIGNAL", signalName(last.Signal))
		set("SUPERVISE_EXIT_REASON", last.Reason)
	}
	env := make([]string, len(order))
	for i, k := range order {
		env[i] = k + "=" + vars[k]
	}
	return env
}

func sandboxConfig(spec *config.Program, key string) proc.SandboxConfig {
	sb := spec.Sandbox
	ns := make([]proc.Namespace, len(sb.Namespaces))
	for i, n := range sb.Namespaces {
		ns[i] = proc.Namespace(n)
	}
	return proc.SandboxConfig{
		Name:       key,
		Namespaces: ns,
		Hostname:   sb.Hostname,
		MemoryMax:  sb.MemoryMax,
		CPUMax:     sb.CPUMax,
		PidsMax:    sb.PidsMax,
	}
}

func processConfig(spec *config.Program, env []string) proc.ProcessConfig {
	sb := spec.Sandbox
	cfg := proc.ProcessConfig{
		Args:            spec.Command,
		Dir:             spec.Dir,
		Env:             env,
		User:            spec.User,
		Group:           spec.Group,
		Groups:          spec.Groups,
		NoNewPrivileges: sb.NoNewPrivileges,
		Umask:           sb.Umask,
		StopSignal:      spec.StopSignal,
	}
	for name, rl := range sb.Rlimits {
		cfg.Rlimits = append(cfg.Rlimits, proc.Rlimit{Name: name, Soft: rl.Soft, Hard: rl.Hard})
	}
	return cfg
}

func execConfig(spec *config.Program, env []string) proc.ExecConfig {
	return proc.ExecConfig{Dir: spec.Dir, Env: env, User: spec.User, Group: spec.Group}
}

func signalName(sig syscall.Signal) string {
	if sig == 0 {
		return ""
	}
	if n := unix.SignalName(sig); n != "" {
		return strings.TrimPrefix(n, "SIG")
	}
	return strconv.Itoa(int(sig))
}
