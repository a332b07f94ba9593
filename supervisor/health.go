package supervisor

import (
	"context"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/logs"
	"github.com/supervise-dev/supervise/notify"
	"github.com/supervise-dev/supervise/probe"
)

// Reasons of exits the supervisor causes for a program's health.
const (
	ReasonLivenessProbeFailed = "LivenessProbeFailed"
	ReasonStartupProbeFailed  = "StartupProbeFailed"
	ReasonWatchdogTimeout     = "WatchdogTimeout"
)

// healthKill reports whether reason is one of the kills above, or a job's
// run stopped for passing max_runtime (ReasonMaxRuntime). Such a run
// failed whatever its exit code: a program that traps SIGTERM and exits 0
// after a failed liveness probe was still hung, and the kubelet restarts
// it under every policy but Never.
func healthKill(reason string) bool {
	switch reason {
	case ReasonLivenessProbeFailed, ReasonStartupProbeFailed, ReasonWatchdogTimeout, ReasonMaxRuntime:
		return true
	}
	return false
}

// health is what watches one process run for readiness and liveness:
// probes, an sd_notify socket, a watchdog, a follower of the log for
// ready_log_line. Its goroutines report by queueing the key; the worker
// that reconciles the key reads the state. Everything is torn down with the
// run.
type health struct {
	probes   *probe.Runner
	sock     *notify.Socket
	fd       *notify.FD
	fdChild  *os.File // the write end of fd, until the child has it
	watchdog *notify.Watchdog
	// adoptedWatchdog: the run's watchdog as an upgrade in place handed it
	// over, for startHealth to go on with its deadline.
	adoptedWatchdog *notify.WatchdogState
	cancel          context.CancelFunc
	wg              sync.WaitGroup // the goroutines startHealth started; stop waits for them
	since           time.Time      // before the process was created: its lines come after

	// Guarded by Supervisor.mu.
	notifyDone  chan struct{} // closed once the sd_notify consumer took every message
	notifyReady bool
	logReady    bool
	// adoptedReady: the run was ready when an upgrade in place handed it
	// over; it stays ready until the restarted probes have a verdict
	// (when the state carried none of theirs: resume).
	adoptedReady bool
	// resume is where the run's probes stood when an upgrade in place
	// handed it over (startHealth resumes them); nil otherwise.
	resume     *probe.State
	status     string // STATUS= of sd_notify
	killReason string // set when the run must end for its health
	killCause  string // what failed, for a kill not a probe's (post_start)
	// notices: per probe kind, the last error or warning an event told
	// of, so each new one is told once.
	notices map[string]string
}

func toProbeSpec(p *config.Probe) *probe.Spec {
	if p == nil {
		return nil
	}
	s := &probe.Spec{
		Command: p.Command, TCP: p.TCP,
		InitialDelay: p.InitialDelay, Period: p.Period, Timeout: p.Timeout,
		SuccessThreshold: p.SuccessThreshold, FailureThreshold: p.FailureThreshold,
	}
	if p.HTTP != nil {
		s.HTTP = &probe.HTTPCheck{URL: p.HTTP.URL, Headers: p.HTTP.Headers, ExpectStatus: p.HTTP.ExpectStatus}
	}
	return s
}

// prepareHealth runs before the process is created: the sd_notify socket
// must exist, and its path be in the environment, before exec. spec is
// the one the start took (a reload replaces in.spec under the lock).
func (s *Supervisor) prepareHealth(in *instance, spec *config.Program, env []string) (*health, []string, error) {
	h := &health{since: s.clock.Now()}
	if spec.Notify == config.NotifySdNotify {
		var owner *notify.Owner
		if id := programIdent(spec); id != nil {
			owner = &notify.Owner{UID: id.UID, GID: id.GID}
		}
		sock, err := notify.ListenPrivate(notify.DefaultBase(), strings.ReplaceAll(in.key, ":", "-"), owner)
		if err != nil {
			return nil, env, err
		}
		h.sock = sock
		env = append(env, notify.Env(sock.Path(), spec.Watchdog)...)
	}
	if spec.Notify == config.NotifyFD {
		fd, w, err := notify.NewFD()
		if err != nil {
			return nil, env, err
		}
		h.fd, h.fdChild = fd, w
	}
	return h, env, nil
}

// childFiles are the descriptors the process gets for its notification.
func (h *health) childFiles(spec *config.Program) map[int]*os.File {
	if h.fdChild == nil {
		return nil
	}
	return map[int]*os.File{spec.NotifyFD: h.fdChild}
}

// started drops our copy of the child's notification fd: with it open,
// the reader would never see EOF.
func (h *health) started() {
	if h.fdChild != nil {
		_ = h.fdChild.Close()
		h.fdChild = nil
	}
}

// startHealth starts the watchers once the process runs: probes, the
// watchdog and sd_notify socket, the notify fd, ready_log_line. Each wakes
// the key's reconcile when what it knows changes.
func (s *Supervisor) startHealth(in *instance, h *health, sid string, pcfgEnv []string) {
	spec := in.spec
	key := in.key
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	wake := func() { s.queue.Add(key) }

	if spec.Probes.Startup != nil || spec.Probes.Readiness != nil || spec.Probes.Liveness != nil {
		r, err := probe.Start(probe.Config{
			Startup:    toProbeSpec(spec.Probes.Startup),
			Readiness:  toProbeSpec(spec.Probes.Readiness),
			Liveness:   toProbeSpec(spec.Probes.Liveness),
			Clock:      s.clock,
			StartedAt:  in.startedAt, // initial delays count from here, post_start included
			Jitter:     s.probeJitterLocked(),
			Exec:       s.rt,
			SandboxID:  sid,
			ExecConfig: execConfig(spec, pcfgEnv),
			OnChange:   func(probe.Status) { wake() },
			Resume:     h.resume,
			Logger:     s.log.With("program", key),
		})
		if err != nil {
			s.log.Error("starting probes", "program", key, "err", err)
		} else {
			h.probes = r
		}
	}
	if spec.Watchdog > 0 && h.sock != nil {
		onTimeout := func() {
			s.mu.Lock()
			if h.killReason == "" {
				h.killReason = ReasonWatchdogTimeout
			}
			s.mu.Unlock()
			wake()
		}
		if h.adoptedWatchdog != nil {
			h.watchdog = notify.RestoreWatchdog(s.clock, *h.adoptedWatchdog, h.sock.Pending, onTimeout)
		} else {
			h.watchdog = notify.NewWatchdog(s.clock, spec.Watchdog, h.sock.Pending, onTimeout)
		}
	}
	if h.sock != nil {
		s.followNotifySocket(in, h, sid)
	}
	if h.fd != nil {
		fd := h.fd
		h.wg.Go(func() {
			select {
			case <-fd.Ready():
				s.mu.Lock()
				h.notifyReady = true
				s.mu.Unlock()
				wake()
			case <-ctx.Done():
			}
		})
	}
	if spec.ReadyLogLine != "" {
		if m, err := notify.NewLineMatcher(spec.ReadyLogLine); err == nil {
			ring, since := in.logs.ring, h.since
			h.wg.Go(func() { s.followReadyLine(ctx, h, ring, m, since, wake) })
		}
	}
}

// followNotifySocket reads the sd_notify messages of in's run on h's
// socket, taking only those the program itself sent, until the socket
// closes or is detached for an upgrade (then h.notifyDone closes).
// s.mu held.
func (s *Supervisor) followNotifySocket(in *instance, h *health, sid string) {
	sock, wd, key := h.sock, h.watchdog, in.key
	wake := func() { s.queue.Add(key) }
	done := make(chan struct{})
	h.notifyDone = done
	var cgroupDir string
	var initPid int
	if st, err := s.rt.SandboxStatus(sid); err == nil {
		cgroupDir, initPid = st.CgroupPath, st.InitPid
	}
	mainPid := in.pid
	messages := sock.Messages()
	h.wg.Go(func() {
		defer close(done)
		warned := false
		for m := range messages {
			if !notify.FromProgram(m.Pid, cgroupDir, mainPid, initPid) {
				// Only the program speaks for itself; once per run is
				// enough to say someone else tried.
				if !warned {
					s.log.Warn("sd_notify message from outside the program ignored", "program", key, "sender_pid", m.Pid, "sender_uid", m.Uid)
					warned = true
				}
				continue
			}
			s.mu.Lock()
			if m.Ready {
				h.notifyReady = true
			}
			if m.Status != "" {
				h.status = m.Status
			}
			s.mu.Unlock()
			kickWatchdog(wd, m)
			wake()
		}
	})
}

// kickWatchdog passes what m says of the watchdog to wd, if there is one.
func kickWatchdog(wd *notify.Watchdog, m notify.Message) {
	if wd == nil {
		return
	}
	switch {
	case m.WatchdogTrigger:
		wd.Trigger()
	case m.WatchdogTimeout > 0:
		wd.SetTimeout(m.WatchdogTimeout)
	case m.Watchdog:
		wd.Kick()
	}
}

// followReadyLine waits for the first line of the run that started at
// since to match ready_log_line. The ring tests each line as it takes it
// (Watch): lines printed before this goroutine ran are held and tested
// too, and the older ones, of earlier runs, are told apart by their time.
func (s *Supervisor) followReadyLine(ctx context.Context, h *health, ring *logs.Ring, m *notify.LineMatcher, since time.Time, wake func()) {
	found := make(chan struct{})
	cancel := ring.Watch(since, m, func() { close(found) })
	defer cancel()
	select {
	case <-found:
		s.mu.Lock()
		h.logReady = true
		s.mu.Unlock()
		wake()
	case <-ctx.Done():
	}
}

// stopWatching ends the probes and the watchdog (a stop has begun); the
// socket stays open, so a program saying STOPPING=1 is not refused. Safe
// on a nil health, and more than once.
func (h *health) stopWatching() {
	if h == nil {
		return
	}
	if h.probes != nil {
		h.probes.Stop()
	}
	if h.watchdog != nil {
		h.watchdog.Stop()
	}
}

// stop tears the watchers down; safe on a nil health.
func (h *health) stop() {
	if h == nil {
		return
	}
	h.stopWatching()
	if h.sock != nil {
		_ = h.sock.Close()
	}
	h.started()
	if h.cancel != nil {
		h.cancel()
		h.wg.Wait()
	}
	if h.fd != nil {
		_ = h.fd.Close()
	}
}

// readyLocked says whether in is ready: running, and its readiness check
// (if it has one) passed.
func readyLocked(in *instance) bool {
	if in.procID == "" || in.state != Running {
		return false
	}
	if !in.spec.HasReadinessCheck() {
		return true
	}
	h := in.health
	if h == nil {
		return false
	}
	switch {
	case h.probes != nil:
		st := h.probes.Status()
		if _, judged := st.Last[probe.Readiness]; h.adoptedReady && !judged && !st.LivenessFailed {
			return true
		}
		return st.Ready
	case in.spec.Notify == config.NotifySdNotify, in.spec.Notify == config.NotifyFD:
		return h.notifyReady
	case in.spec.ReadyLogLine != "":
		return h.logReady || h.adoptedReady
	}
	return false
}

// checkHealth runs in the worker of in's key: it records a change of
// readiness, and reports whether the run must end for its health (a failed
// liveness or startup probe, a missed watchdog).
func (s *Supervisor) checkHealthLocked(in *instance) (kill bool) {
	h := in.health
	if h == nil || in.procID == "" {
		return false
	}
	if h.killReason == "" && h.probes != nil {
		if st := h.probes.Status(); st.LivenessFailed {
			h.killReason = ReasonLivenessProbeFailed
			if st.FailedProbe == probe.Startup {
				h.killReason = ReasonStartupProbeFailed
			}
			in.message = st.Failure
		}
	}
	jobKillLocked(in, h) // max_runtime (schedule.go)
	ready := readyLocked(in)
	if ready != in.ready {
		in.ready = ready
		msg := "not ready"
		if ready {
			msg = "ready"
		} else if h.probes != nil {
			if why := notReadyWhy(probeResults(h.probes.Status())); why != "" {
				msg += ": " + why
			}
		}
		s.events.add(in.key, string(in.state), string(in.state), msg)
		s.notifyChangedLocked()
		if ready {
			s.wakeDependentsLocked(in.spec.Name)
		}
		s.checkSystemdReadyLocked()
	}
	if h.probes != nil {
		st := h.probes.Status()
		s.probeNoticesLocked(in, h, st.Last)
		if in.spec.Sidecar && !ready && st.Started {
			s.wakeDependentsLocked(in.spec.Name) // they wait for it to start, not to be ready
		}
	}
	return h.killReason != ""
}

// probeNoticesLocked adds an event for each new probe error (the probe
// could not run, and did not count) or warning (a redirect to another
// host, not followed, counted as a success).
func (s *Supervisor) probeNoticesLocked(in *instance, h *health, last map[string]probe.Result) {
	for kind, r := range last {
		n := r.Warning
		if r.Error {
			n = r.Message
		}
		if n == "" || h.notices[kind] == n {
			continue
		}
		if h.notices == nil {
			h.notices = map[string]string{}
		}
		h.notices[kind] = n
		s.events.add(in.key, string(in.state), string(in.state), kind+" probe: "+n)
	}
}

// checkSystemdReadyLocked tells systemd (Type=notify) READY=1, and
// Options.Ready, once every autostart program is ready or has completed.
func (s *Supervisor) checkSystemdReadyLocked() {
	if s.systemdReady {
		return
	}
	for _, in := range s.instances {
		if !in.spec.Autostart || in.job != nil { // a job is not a service to wait for
			continue
		}
		if !in.ready && in.state != Completed {
			return
		}
	}
	s.systemdReady = true
	if err := notify.NotifySystemd("READY=1\nSTATUS=all programs ready"); err != nil {
		s.log.Warn("telling systemd we are ready", "err", err)
	}
	if s.onReady != nil {
		s.bg.Go(s.onReady)
	}
}

// probeJitterLocked is the spread of first probes: while the supervisor is
// younger than a probe's period, that probe's first run waits a random
// fraction of the period, as the kubelet's workers do after it starts, so
// a thousand programs started together do not probe together. nil when
// probe_jitter is off.
func (s *Supervisor) probeJitterLocked() func(time.Duration) time.Duration {
	if !s.cfg.Supervisor.ProbeJitter {
		return nil
	}
	age := s.clock.Since(s.bootedAt)
	return func(period time.Duration) time.Duration {
		if age >= period {
			return 0
		}
		return time.Duration(s.randFloat() * float64(period))
	}
}
