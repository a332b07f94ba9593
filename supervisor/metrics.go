package supervisor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/metrics"
	"github.com/supervise-dev/supervise/proc"
	"github.com/supervise-dev/supervise/supervisor/workqueue"
)

// Snapshot returns the figures the metrics listener serves. Like Status,
// it reads the cgroups outside the lock, through the one-second cache.
func (s *Supervisor) Snapshot() metrics.Snapshot {
	s.mu.Lock()
	keys := s.sortedKeysLocked()
	snap := metrics.Snapshot{
		States:             make([]string, len(allStates)),
		Programs:           make([]metrics.Program, 0, len(keys)),
		Reloads:            s.reloads,
		ReloadFailures:     s.reloadFailures,
		IllegalTransitions: uint64(s.illegal),
	}
	for i, st := range allStates {
		snap.States[i] = string(st)
	}
	sandboxes := make([]string, 0, len(keys))
	for _, k := range keys {
		in := s.instances[k]
		p := metrics.Program{
			Name:      in.key,
			Program:   in.spec.Name,
			Instance:  strconv.Itoa(in.index),
			State:     string(in.state),
			Ready:     in.ready,
			Autostart: in.spec.Autostart,
			Restarts:  in.restarts,
			OOMKills:  in.oomKills,
			Pid:       in.pid,
		}
		p.Up = p.Ready || in.state == Completed
		if in.procID != "" && !in.startedAt.IsZero() {
			p.StartedAt = in.startedAt
		}
		if e := in.lastExit; e != nil {
			p.LastExit = &metrics.Exit{Code: e.Code, Reason: e.Reason}
		}
		if h := in.health; h != nil && h.probes != nil && in.procID != "" {
			for kind, r := range h.probes.Status().Last {
				p.Probes = append(p.Probes, metrics.Probe{Kind: kind, OK: r.OK, Duration: r.Duration})
			}
			slices.SortFunc(p.Probes, func(a, b metrics.Probe) int { return strings.Compare(a.Kind, b.Kind) })
		}
		jobMetricsLocked(in, &p)
		snap.Programs = append(snap.Programs, p)
		sid := ""
		if in.pid != 0 {
			sid = in.sandboxID
		}
		sandboxes = append(sandboxes, sid)
	}
	snap.Empty = s.emptyProgramsLocked()
	s.mu.Unlock()
	s.figures(sandboxes, s.clock.Now(), func(i int, st proc.Stats) {
		snap.Programs[i].Stats = true
		snap.Programs[i].MemoryBytes = st.MemoryBytes
		snap.Programs[i].CPUSeconds = st.CPUUsage.Seconds()
	})
	snap.Queue = queueFigures(s.queue.Stats())
	return snap
}

// Runs returns the last ended run of every instance that has one, for
// the web console.
func (s *Supervisor) Runs() map[string]metrics.Run {
	s.mu.Lock()
	live := s.sortedKeysLocked()
	s.mu.Unlock()
	s.why.mu.Lock()
	defer s.why.mu.Unlock()
	s.why.pruneLocked(live)
	out := make(map[string]metrics.Run, len(s.why.runs))
	for k, p := range s.why.runs {
		if r := p.last; r != nil {
			m := metrics.Run{EndedAt: r.EndedAt, DurationMs: r.DurationMs, Status: r.Status, Code: r.Code,
				Signal: r.Signal, Reason: r.Reason, Message: r.Message, PeakMemoryBytes: r.PeakMemoryBytes,
				Stdout: r.Stdout, Stderr: r.Stderr, Truncated: r.Truncated}
			if r.StartedAt != nil {
				m.StartedAt = *r.StartedAt
			}
			out[k] = m
		}
	}
	return out
}

// LogTail returns the last n lines of the instance key, for the web
// console.
func (s *Supervisor) LogTail(key string, n int) ([]metrics.LogLine, error) {
	s.mu.Lock()
	in := s.instances[key]
	var il *instLogs
	if in != nil {
		il = in.logs
	}
	s.mu.Unlock()
	if in == nil {
		return nil, fmt.Errorf("no instance %q", key)
	}
	if il == nil {
		return nil, nil
	}
	lines := il.ring.Last(n)
	out := make([]metrics.LogLine, len(lines))
	for i, l := range lines {
		out[i] = metrics.LogLine{Time: l.Time, Stream: l.Stream, Text: l.Text}
	}
	return out, nil
}

func queueFigures(st workqueue.Stats) metrics.Queue {
	hist := func(h workqueue.Histogram) metrics.Histogram {
		return metrics.Histogram{Bounds: workqueue.HistogramBounds[:], Counts: h.Buckets[:], Count: h.Count, Sum: h.Sum}
	}
	return metrics.Queue{
		Name:           st.Name,
		Depth:          st.Depth,
		Adds:           st.Adds,
		Retries:        st.Retries,
		LongestRunning: st.LongestRunning,
		UnfinishedWork: st.UnfinishedWork,
		QueueTime:      hist(st.QueueTime),
		WorkTime:       hist(st.WorkTime),
	}
}

// lockBound is how long Healthy waits for the supervisor's lock, which is
// only ever held briefly: longer means a deadlock.
const lockBound = 5 * time.Second

// stuckSlack is what a worker may hold a key for beyond the hooks it runs:
// creating a sandbox, starting a process, reading a status.
const stuckSlack = time.Minute

// Healthy reports an error when the supervisor's loop is stuck: its lock
// not free within lockBound, or a worker holding one program for longer
// than the hooks it may run allow, plus a minute.
func (s *Supervisor) Healthy() error {
	if !s.lockFreeWithin(lockBound) {
		return fmt.Errorf("the supervisor's lock has not been free for %v", lockBound)
	}
	s.mu.Lock()
	bound := stuckSlack + s.longestHooksLocked()
	s.mu.Unlock()
	if held := s.queue.Stats().LongestRunning; held > bound {
		return fmt.Errorf("a worker has held one program for %v (the bound is %v)", held.Round(time.Second), bound)
	}
	return nil
}

// longestHooksLocked is the longest a worker may spend in hooks for one
// program: pre_start and post_start in one start, or pre_stop in a stop
// and post_stop after the exit.
func (s *Supervisor) longestHooksLocked() time.Duration {
	var longest time.Duration
	for _, p := range s.cfg.Programs {
		t := func(hs ...*config.Hook) time.Duration {
			var d time.Duration
			for _, h := range hs {
				if h != nil {
					d += h.Timeout
				}
			}
			return d
		}
		longest = max(longest, t(p.Hooks.PreStart, p.Hooks.PostStart), t(p.Hooks.PreStop, p.Hooks.PostStop))
	}
	return longest
}

// lockFreeWithin reports whether s.mu could be taken within d. One
// goroutine at most waits for the lock, however often this is called; it
// ends as soon as the lock is free.
func (s *Supervisor) lockFreeWithin(d time.Duration) bool {
	s.lockCheckMu.Lock()
	ch := s.lockCheck
	if ch == nil {
		ch = make(chan struct{})
		s.lockCheck = ch
		go func() {
			s.mu.Lock()
			s.mu.Unlock() // only to see that it can be taken
			s.lockCheckMu.Lock()
			s.lockCheck = nil
			s.lockCheckMu.Unlock()
			close(ch)
		}()
	}
	s.lockCheckMu.Unlock()
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C():
		return false
	}
}
