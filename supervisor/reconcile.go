package supervisor

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/hooks"
	"github.com/supervise-dev/supervise/internal/unixsig"
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
			s.notifyChangedLocked() // waiters on the set of instances
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

func (s *Supervisor) reconcileRun(ctx context.Context, in *instance) error {
	// Two passes at most: a restart whose process is gone by the time the
	// stop looks is decided again, as a start.
	for range 2 {
		s.mu.Lock()
		v := s.runViewLocked(in)
		step := decideRun(v)
		switch step {
		case stepStopForRestart, stepStopUnhealthy:
			s.mu.Unlock()
			// An unhealthy run ends as a crash: its health's reason, the
			// backoff.
			if s.advanceStop(ctx, in) || step == stepStopUnhealthy {
				return nil
			}
			continue
		case stepWaitDependency:
			s.setStateLocked(in, Waiting, "waiting for "+v.unmetDep)
		case stepBackOff:
			in.nextStart = s.clock.Now().Add(v.backoffLeft)
			s.setStateLocked(in, CrashLoopBackOff, "back-off "+in.backoff.Get(in.key).String())
			s.queue.AddAfter(in.key, v.backoffLeft)
		case stepStart:
			if v.afterExit && !v.restartRequested {
				in.backoff.Decide(in.key, in.lastExit.FinishedAt) // records the step
			}
			// As the kubelet's restartCount: restarts after an exit of
			// the program's own, not the ones asked for.
			if v.afterExit {
				in.restarts++
			}
			in.afterExit = false
			in.nextStart = time.Time{}
			s.jobRunStartsLocked(in)
			s.mu.Unlock()
			return s.start(ctx, in)
		}
		s.mu.Unlock()
		return nil
	}
	return nil
}

// runViewLocked copies out what decideRun looks at. Looking has effects of
// its own: a change of readiness is recorded, and with no process left a
// restart request is taken (this pass acts on it) and a restart asked for
// lifts a program's end for good.
func (s *Supervisor) runViewLocked(in *instance) runView {
	v := runView{
		running:          in.procID != "",
		restartRequested: in.restartRequested,
		settled:          in.settled,
		shuttingDown:     s.shuttingDown,
		afterExit:        in.afterExit,
	}
	jobViewLocked(in, &v)
	if v.running {
		if !v.restartRequested {
			v.unhealthy = s.checkHealthLocked(in)
		}
		return v
	}
	in.restartRequested = false
	if v.settled && !v.restartRequested {
		return v
	}
	in.settled = false
	if v.shuttingDown {
		return v
	}
	v.unmetDep = s.unmetDepLocked(in)
	if v.afterExit && !v.restartRequested && in.lastExit != nil {
		v.backoffLeft = in.backoff.Left(in.key, in.lastExit.FinishedAt)
	}
	return v
}

func (s *Supervisor) runHook(ctx context.Context, in *instance, phase hooks.Phase, h *config.Hook, env []string) error {
	s.mu.Lock()
	sid := in.sandboxID
	spec, streams := in.spec, in.logs
	s.mu.Unlock()
	spec2 := hooks.Spec{Command: h.Command, Timeout: h.Timeout}
	if h.HTTP != nil {
		spec2.HTTP = &hooks.HTTP{URL: h.HTTP.URL, Method: h.HTTP.Method, Headers: h.HTTP.Headers, ExpectStatus: h.HTTP.ExpectStatus}
	}
	out := streams.hookWriter(string(phase))
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
	// Each variable as its "KEY=value" entry: the supervisor's own are
	// kept as they are, not rebuilt, so a thousand programs share their
	// strings instead of holding a copy each.
	entries := map[string]string{}
	var order []string
	put := func(k, kv string) {
		if _, ok := entries[k]; !ok {
			order = append(order, k)
		}
		entries[k] = kv
	}
	set := func(k, v string) { put(k, k+"="+v) }
	for _, kv := range os.Environ() {
		if k, _, ok := strings.Cut(kv, "="); ok && !ownNotifyVar[k] {
			put(k, kv)
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
		set("SUPERVISE_EXIT_SIGNAL", unixsig.Name(last.Signal))
		set("SUPERVISE_EXIT_REASON", last.Reason)
	}
	env := make([]string, len(order))
	for i, k := range order {
		env[i] = entries[k]
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
