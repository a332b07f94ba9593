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
		pending = nil // of a process whose start failed: launch removed it
	}
	s.mu.Unlock()

	if pending != nil {
		s.handleExit(ctx, in, pending.exit)
	}

	s.mu.Lock()
	runStoppedLocked(in) // a job's run beside its instance goes once stopped (schedule.go)
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
			s.removeInstanceLocked(in)
			s.notifyChangedLocked() // waiters on the set of instances
			s.events.add(key, string(in.state), "Removed", "")
			s.bg.Go(s.logs.remove(key, in.logs))
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
		if in.procID != "" && !in.restartRequested {
			s.checkHealthLocked(in) // a change of readiness is recorded; a kill reason set
		}
		v := s.runViewLocked(in)
		d := decideRun(v)
		if d.take {
			s.takeAsksLocked(in, v)
		}
		switch d.step {
		case stepStopForRestart, stepStopUnhealthy:
			s.mu.Unlock()
			// An unhealthy run ends as a crash: its health's reason, the
			// backoff.
			if s.advanceStop(ctx, in) || d.step == stepStopUnhealthy {
				return nil
			}
			continue
		case stepSettle:
			s.settleLocked(in)
			s.mu.Unlock()
			// Nothing runs in its sandbox again.
			if err := s.releaseSandbox(ctx, in, false); err != nil {
				s.log.Warn("deleting sandbox", "program", in.key, "err", err)
			}
			return nil
		case stepWaitDependency:
			s.setStateLocked(in, Waiting, "waiting for "+v.unmetDep)
		case stepBackOff:
			in.nextStart = s.clock.Now().Add(v.backoffLeft)
			s.setStateLocked(in, CrashLoopBackOff, "back-off "+in.backoff.Get(in.key).String())
			s.queue.AddAfter(in.key, v.backoffLeft)
		case stepStart:
			own := v.afterExit && !v.waiveBackoff
			if own && !v.restartRequested {
				in.backoff.Decide(in.key, in.lastExit.FinishedAt) // records the step
			}
			// As the kubelet's restartCount: restarts after an exit of
			// the program's own, not the ones asked for.
			if own && v.policyRestart {
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

// runViewLocked copies out what decideRun looks at; it changes nothing.
func (s *Supervisor) runViewLocked(in *instance) runView {
	v := runView{
		running:          in.procID != "",
		restartRequested: in.restartRequested,
		startAsked:       in.startAsked,
		waiveBackoff:     in.waiveBackoff,
		settled:          in.settled,
		shuttingDown:     s.shuttingDown,
		afterExit:        in.afterExit,
		backingOff:       in.state == CrashLoopBackOff,
	}
	jobViewLocked(in, &v)
	if v.running {
		v.unhealthy = in.health != nil && in.health.killReason != ""
		return v
	}
	if (!v.settled || v.restartRequested || v.startAsked) && !v.shuttingDown {
		v.unmetDep = s.unmetDepLocked(in)
	}
	if v.afterExit && in.lastExit != nil {
		v.policyRestart = restartWanted(in.spec, in.lastExit, in.lastExit.failed(in.spec))
		v.backoffLeft = in.backoff.Left(in.key, in.lastExit.FinishedAt)
	}
	return v
}

// takeAsksLocked uses up what commands asked of in's next run, as
// decideRun said (runDecision.take).
func (s *Supervisor) takeAsksLocked(in *instance, v runView) {
	if v.restartRequested || v.startAsked {
		in.settled = false
	}
	if v.waiveBackoff {
		in.afterExit = false
	}
	in.restartRequested, in.startAsked, in.waiveBackoff = false, false, false
}

// askStartLocked lifts in's end for good for its next start (and with
// waive, the crash backoff of its last exit); the worker takes the ask
// (takeAsksLocked). A run under way is left as it is: its own exit is
// judged as any other.
func askStartLocked(in *instance, waive bool) {
	if in.procID != "" || in.state == Starting {
		return
	}
	in.startAsked = true
	if waive {
		in.waiveBackoff = true
	}
}

// runHook runs hook h of in's run, in its sandbox, with spec and streams
// as the caller took them (under the lock: a reload replaces both).
func (s *Supervisor) runHook(ctx context.Context, in *instance, spec *config.Program, streams programLogs, phase hooks.Phase, h *config.Hook, env []string) error {
	hs := hooks.Spec{Command: h.Command, Sleep: h.Sleep, Timeout: h.Timeout}
	if h.HTTP != nil {
		hs.HTTP = &hooks.HTTP{URL: h.HTTP.URL, Method: h.HTTP.Method, Headers: h.HTTP.Headers, ExpectStatus: h.HTTP.ExpectStatus}
	}
	out := streams.hookWriter(string(phase))
	defer out.Close()
	call := hooks.Call{
		Phase:     phase,
		SandboxID: in.sandboxID,
		Exec:      execConfig(spec, append(env, "SUPERVISE_HOOK="+string(phase))),
		Output:    out,
	}
	s.log.Info("hook", "program", in.key, "hook", phase)
	return s.hooks.Run(ctx, hs, call)
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
	if spec.Port != 0 { // Procfile mode: foreman's PORT, one per instance, and PS=web.1
		set("PORT", strconv.Itoa(spec.Port+in.index))
		set("PS", spec.Name+"."+strconv.Itoa(in.index+1))
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
