package supervisor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/logs"
	"github.com/supervise-dev/supervise/probe"
	"github.com/supervise-dev/supervise/proc"
)

// The control API: Supervisor implements ctl.Backend. Every command that
// changes what runs is a restart intent on the work queue; the reply comes
// when the intent has been carried out (or ctx ends).
var _ ctl.Backend = (*Supervisor)(nil)

// resolveLocked turns names into instance keys: "all", a program name (every
// instance of it) or an instance key ("web:1").
func (s *Supervisor) resolveLocked(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, errors.New("no program named (use \"all\" for every program)")
	}
	seen := map[string]bool{}
	var keys []string
	add := func(k string) {
		if s.instances[k].goal == goalRemove {
			return // gone from the config, on its way out
		}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, n := range names {
		if n == "all" {
			for _, k := range s.sortedKeysLocked() {
				add(k)
			}
			continue
		}
		if in, ok := s.instances[n]; ok && in.goal != goalRemove {
			add(n)
			for _, k := range s.runsBesideLocked(in) { // a job's runs (schedule.go)
				add(k)
			}
			continue
		}
		found := false
		for _, k := range s.sortedKeysLocked() {
			if in := s.instances[k]; in.spec.Name == n && in.goal != goalRemove {
				add(k)
				found = true
			}
		}
		if !found {
			if s.cfg.Program(n) != nil {
				return nil, fmt.Errorf("%q has 0 instances (scale it up: scale %s=N)", n, n)
			}
			return nil, fmt.Errorf("%w %q", ctl.ErrUnknownProgram, n)
		}
	}
	return keys, nil
}

// Status reports every instance named (all when names is empty). A
// program scaled to 0 is known, and has no instance to report.
func (s *Supervisor) Status(ctx context.Context, names []string) ([]ctl.ProgramStatus, error) {
	s.mu.Lock()
	keys := s.sortedKeysLocked()
	if len(names) > 0 {
		empty := s.emptyProgramsLocked()
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool {
			_, found := slices.BinarySearch(empty, n)
			return found
		})
		keys = nil
		if len(names) > 0 {
			var err error
			if keys, err = s.resolveLocked(names); err != nil {
				s.mu.Unlock()
				return nil, err
			}
		}
	}
	out := make([]ctl.ProgramStatus, 0, len(keys))
	sandboxes := make([]string, 0, len(keys))
	now := s.clock.Now()
	for _, k := range keys {
		in := s.instances[k]
		out = append(out, statusLocked(in, now))
		sandboxes = append(sandboxes, in.sandboxID)
	}
	s.mu.Unlock()
	for i := range out {
		if out[i].Pid == 0 {
			sandboxes[i] = ""
		}
	}
	// cgroup reads outside the lock: they are file reads.
	s.figures(sandboxes, now, func(i int, st proc.Stats) {
		out[i].MemoryBytes = st.MemoryBytes
		out[i].CPUSeconds = st.CPUUsage.Seconds()
	})
	return out, nil
}

// figures reads the cgroup figures of each sandbox of sids ("" for none)
// and gives them to set by index. While frozen for an upgrade the
// runtime is not asked (frozen.go): they are the last ones read, however
// old.
func (s *Supervisor) figures(sids []string, now time.Time, set func(i int, st proc.Stats)) {
	get := func(sid string) (proc.Stats, bool) { return s.stats.get(s.rt, sid, now) }
	fill := func() {
		for i, sid := range sids {
			if sid == "" {
				continue
			}
			if st, ok := get(sid); ok {
				set(i, st)
			}
		}
	}
	if !s.tryRuntimeCall(fill) {
		get = s.stats.cached
		fill()
	}
}

// statusLocked is what status shows of in, less the cgroup figures.
func statusLocked(in *instance, now time.Time) ctl.ProgramStatus {
	st := ctl.ProgramStatus{
		Name:     in.key,
		State:    string(in.state),
		Pid:      in.pid,
		Restarts: in.restarts,
		Message:  in.message,
	}
	// Always said, as the ready metric says it: without a readiness
	// check, running is ready.
	r := in.ready
	st.Ready = &r
	if h := in.health; h != nil && h.status != "" && st.Message == "" {
		st.Message = h.status // sd_notify's STATUS=
	}
	if h := in.health; h != nil && h.probes != nil && in.procID != "" {
		st.Probes = probeResults(h.probes.Status())
		if st.Message == "" && !in.ready {
			st.Message = notReadyWhy(st.Probes)
		}
	}
	if in.procID != "" && !in.startedAt.IsZero() {
		t := in.startedAt
		st.StartedAt = &t
	}
	if e := in.lastExit; e != nil {
		code := e.Code
		if e.Signal != 0 {
			code = 128 + int(e.Signal) // as the kubelet and shells show it; the name stays in Signal
		}
		st.LastExit = &ctl.ExitInfo{Code: code, Signal: unixsig.Name(e.Signal), Reason: e.Reason, FinishedAt: e.FinishedAt}
	}
	if in.state == CrashLoopBackOff && !in.nextStart.IsZero() {
		st.NextStartInMs = max(in.nextStart.Sub(now).Milliseconds(), 0)
	}
	jobStatusLocked(in, &st, now)
	return st
}

// statsCache keeps each sandbox's cgroup figures for a second: a status of
// a thousand programs is two thousand file reads, and a dashboard polling
// it must not pay them on every call. Entries of deleted sandboxes go at
// the next sweep.
type statsCache struct {
	mu      sync.Mutex
	entries map[string]statsEntry
	swept   time.Time
}

type statsEntry struct {
	at    time.Time
	stats proc.Stats
}

const statsTTL = time.Second

func (c *statsCache) get(rt Runtime, sid string, now time.Time) (proc.Stats, bool) {
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]statsEntry{}
	}
	if now.Sub(c.swept) > time.Minute {
		for k, e := range c.entries {
			if now.Sub(e.at) > statsTTL {
				delete(c.entries, k)
			}
		}
		c.swept = now
	}
	e, ok := c.entries[sid]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < statsTTL {
		return e.stats, true
	}
	st, err := rt.Usage(sid)
	if err != nil {
		return proc.Stats{}, false
	}
	c.mu.Lock()
	c.entries[sid] = statsEntry{at: now, stats: st}
	c.mu.Unlock()
	return st, true
}

// cached is the last figures read of sid, however old.
func (c *statsCache) cached(sid string) (proc.Stats, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[sid]
	return e.stats, ok
}

// Start asks named instances to run and, unless opts.NoWait, waits until
// each is ready (or completed, for a one-shot), reporting one that failed,
// is crash-looping, or is not ready within the timeout (opts.Timeout, or
// its rollout timeout). One waiting for a dependency is waited for.
func (s *Supervisor) Start(ctx context.Context, names []string, opts ctl.WaitOptions) error {
	keys, err := s.command(names, func(in *instance) {
		s.runNowLocked(in)
		in.goal, in.stoppedFor = goalRun, ""
		// In CrashLoopBackOff, the backoff still decides: start does not
		// jump the queue.
		askStartLocked(in, in.state != CrashLoopBackOff)
	})
	if err != nil || opts.NoWait {
		return err
	}
	return s.waitAllReady(ctx, keys, opts.Timeout, "did not start")
}

// waitAllReady waits for each of keys to be ready (see waitReady), each
// within timeout or its own rollout timeout, and joins what failed.
func (s *Supervisor) waitAllReady(ctx context.Context, keys []string, timeout time.Duration, failed string) error {
	var errs []error
	for _, k := range keys {
		t := timeout
		if t <= 0 {
			t = s.rolloutTimeout(k)
		}
		if err := s.waitReadyAs(ctx, k, "", t, failed); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Stop stops named instances and waits until they are down, the deepest
// dependents first (as the shutdown does). Dependents keep running, as
// through a crash, unless opts.WithDependents, or restart_with binds them
// to a program stopped whole: those stop first, deepest first, and run
// again when their dependency does.
func (s *Supervisor) Stop(ctx context.Context, names []string, opts ctl.StopOptions) error {
	keys, _, err := s.resolve(names)
	if err != nil {
		return err
	}
	s.mu.Lock()
	deps, cause := s.dependentsLocked(keys, opts.WithDependents)
	s.mu.Unlock()
	if err := s.stopDependents(ctx, deps, cause); err != nil {
		return err
	}
	s.mu.Lock()
	slices.SortStableFunc(keys, func(a, b string) int {
		return s.level[s.instances[b].spec.Name] - s.level[s.instances[a].spec.Name]
	})
	s.mu.Unlock()
	for len(keys) > 0 {
		var batch []string
		s.mu.Lock()
		if s.shuttingDown {
			s.mu.Unlock()
			return errors.New("supervise is shutting down")
		}
		level := -1
		for len(keys) > 0 {
			in := s.instances[keys[0]]
			if in == nil {
				keys = keys[1:]
				continue
			}
			l := s.level[in.spec.Name]
			if level >= 0 && l != level {
				break
			}
			level = l
			in.goal, in.stoppedFor = goalStop, ""
			s.queue.Add(in.key)
			batch = append(batch, in.key)
			batch = append(batch, s.stopRunsBesideLocked(in)...) // begun since resolve (schedule.go)
			keys = keys[1:]
		}
		s.mu.Unlock()
		if err := s.waitSettled(ctx, batch, stopDoneOrGone); err != nil {
			return err
		}
	}
	return nil
}

// resolve names the instances names resolve to, and their programs.
func (s *Supervisor) resolve(names []string) (keys, programs []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown {
		return nil, nil, errors.New("supervise is shutting down")
	}
	if keys, err = s.resolveLocked(names); err != nil {
		return nil, nil, err
	}
	for _, k := range keys {
		if p := s.instances[k].spec.Name; !slices.Contains(programs, p) {
			programs = append(programs, p)
		}
	}
	return keys, programs, nil
}

// Signal sends sig to the process group of each named running instance.
// It is not a restart intent: nothing changes state.
func (s *Supervisor) Signal(ctx context.Context, sig syscall.Signal, names []string) error {
	s.mu.Lock()
	keys, err := s.resolveLocked(names)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	ids := make(map[string]string, len(keys))
	for _, k := range keys {
		ids[k] = s.instances[k].procID
	}
	s.mu.Unlock()
	var errs []error
	if err := s.runtimeCall(ctx, func() {
		for _, k := range keys {
			if ids[k] == "" {
				if len(keys) == 1 {
					errs = append(errs, fmt.Errorf("%q is not running", k))
				}
				continue
			}
			if err := s.rt.Signal(ids[k], sig); err != nil {
				errs = append(errs, fmt.Errorf("signalling %q: %w", k, err))
			}
		}
	}); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// Logs streams the last n lines of the named programs (all when none), and
// with follow every new line until ctx ends.
func (s *Supervisor) Logs(ctx context.Context, names []string, n int, follow bool) (<-chan logs.Line, error) {
	s.mu.Lock()
	keys := s.sortedKeysLocked()
	if len(names) > 0 {
		var err error
		if keys, err = s.resolveLocked(names); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	var sources []programLogs
	rings := map[*logs.Ring]bool{} // a job's runs share its ring
	for _, k := range keys {
		if il := s.instances[k].logs; !rings[il.ring] {
			rings[il.ring] = true
			sources = append(sources, il)
		}
	}
	s.mu.Unlock()
	ctx, done, err := s.streams.begin(ctx)
	if err != nil {
		return nil, err
	}
	return mergeLogs(ctx, sources, n, follow, done), nil
}

// Events streams the recent state changes, and with follow the new ones.
func (s *Supervisor) Events(ctx context.Context, follow bool) (<-chan ctl.Event, error) {
	ctx, done, err := s.streams.begin(ctx)
	if err != nil {
		return nil, err
	}
	return s.events.stream(ctx, follow, done), nil
}

// Reload re-reads the config file and applies the difference.
func (s *Supervisor) Reload(ctx context.Context) error {
	_, err := s.ReloadChanges(ctx)
	return err
}

// ReloadChanges is Reload, saying what changed: the upgrade in place
// reports it.
func (s *Supervisor) ReloadChanges(ctx context.Context) (Changes, error) {
	s.mu.Lock()
	file := s.cfg.File
	s.mu.Unlock()
	cfg, err := s.load(file)
	if err != nil {
		s.mu.Lock()
		s.reloadFailures++
		s.mu.Unlock()
		s.events.add("supervisor", "", "ReloadFailed", err.Error())
		return Changes{}, fmt.Errorf("reloading %s: %w (the running config stays)", file, err)
	}
	return s.applyConfig(cfg)
}

// Shutdown stops everything in order and ends Run.
func (s *Supervisor) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stopReq) })
	return nil
}

// command applies f to every named instance under the lock and queues them.
func (s *Supervisor) command(names []string, f func(*instance)) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown {
		return nil, errors.New("supervise is shutting down")
	}
	keys, err := s.resolveLocked(names)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		f(s.instances[k])
		s.queue.Add(k)
	}
	return keys, nil
}

// waitSettled waits until done holds for every key (or the key is gone).
func (s *Supervisor) waitSettled(ctx context.Context, keys []string, done func(*instance) bool) error {
	err := s.waitFor(ctx, func() bool {
		for _, k := range keys {
			if in := s.instances[k]; in != nil && !done(in) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", strings.Join(keys, ", "), err)
	}
	return nil
}

// statusSummary is used in logs and tests: "web=Running worker=Waiting".
func (s *Supervisor) statusSummary() string {
	st, _ := s.Status(context.Background(), nil)
	parts := make([]string, len(st))
	for i, p := range st {
		parts[i] = p.Name + "=" + p.State
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// probeResults is the status view of a runner's last results, keyed by
// probe kind ("startup", "readiness", "liveness").
func probeResults(ps probe.Status) map[string]ctl.ProbeResult {
	if len(ps.Last) == 0 {
		return nil
	}
	out := make(map[string]ctl.ProbeResult, len(ps.Last))
	for kind, r := range ps.Last {
		out[kind] = ctl.ProbeResult{OK: r.OK, Message: r.Message, Time: r.Time}
	}
	return out
}

// notReadyWhy names the failing probe that holds readiness back, the
// startup probe first since it gates the other.
func notReadyWhy(last map[string]ctl.ProbeResult) string {
	for _, kind := range []string{"startup", "readiness"} {
		if r, ok := last[kind]; ok && !r.OK {
			return kind + " probe: " + r.Message
		}
	}
	return ""
}
