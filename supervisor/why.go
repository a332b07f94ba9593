package supervisor

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/logs"
	"github.com/supervise-dev/supervise/proc"
)

// Why did it die: at each run's end, the run is written down — its exit,
// how long it ran, its peak memory and its last lines — so that the
// question needs no guessing from status, events and a log tail that
// already holds the next run's lines.

// Bounds of a run's tail: a program printing 10 MB lines keeps at most
// tailLineBytes of each and tailStreamBytes per stream.
const (
	tailLineBytes   = 2 << 10
	tailStreamBytes = 32 << 10
	// drainWait bounds the wait for a run's pipes to reach their end: a
	// child that outlives the process and holds them must not hold the
	// worker.
	drainWait = 2 * time.Second
	// reasonStopped is the reason of a run that ended because it was
	// asked to (stop, restart, shutdown).
	reasonStopped = "Stopped"
)

// runBook keeps the last ended run of each instance, and where in the
// instance's ring that run's lines begin.
type runBook struct {
	mu   sync.Mutex
	runs map[string]*runPage // by instance key; guarded by mu
}

type runPage struct {
	ring *logs.Ring // the mark is a count of this ring's lines
	mark uint64     // lines of ring taken before the current run
	last *ctl.RunRecord
}

// pruneLocked forgets the runs of instances not in live (removed by a
// reload or a scale), so the book stays as large as the config.
func (b *runBook) pruneLocked(live []string) {
	keep := make(map[string]bool, len(live))
	for _, k := range live {
		keep[k] = true
	}
	for k := range b.runs {
		if !keep[k] {
			delete(b.runs, k)
		}
	}
}

// statsReader is the part of the runtime that reads a sandbox's full
// figures, its memory peak among them (*proc.Runtime has it).
type statsReader interface {
	Stats(sandboxID string) (proc.Stats, error)
}

// noteRunEnd writes down the run of in that exit ends; requested says it
// was asked to end. It is called as the exit is recorded, before the
// sandbox (and its cgroup) goes, with s.mu not held.
func (s *Supervisor) noteRunEnd(in *instance, exit exitInfo, requested bool) {
	s.mu.Lock()
	key, spec, il, sid := in.key, in.spec, in.logs, in.sandboxID
	var started *time.Time
	if in.procID != "" && !in.startedAt.IsZero() {
		t := in.startedAt
		started = &t
	}
	s.mu.Unlock()

	rec := &ctl.RunRecord{
		StartedAt: started,
		EndedAt:   exit.FinishedAt,
		Status:    exit.status(),
		Code:      exit.Code,
		Signal:    unixsig.Name(exit.Signal),
		Reason:    exit.Reason,
		Message:   exit.Message,
	}
	if exit.Signal == 0 && exit.Code < 0 {
		rec.Status = -1 // never ran
	}
	if rec.EndedAt.IsZero() {
		rec.EndedAt = s.clock.Now()
	}
	if requested && !healthKill(exit.Reason) && exit.Reason != string(proc.ReasonOOMKilled) {
		rec.Reason = reasonStopped
	}
	if started != nil {
		rec.DurationMs = max(rec.EndedAt.Sub(*started).Milliseconds(), 0)
	}
	if sr, ok := s.rt.(statsReader); ok && sid != "" {
		if st, err := sr.Stats(sid); err == nil {
			rec.PeakMemoryBytes = st.MemoryPeak
		}
	}

	var ring *logs.Ring
	if il != nil {
		ring = il.ring
		// The process is gone; its last lines may still be in the pipes.
		ctx, cancel := context.WithTimeout(s.ctx, drainWait)
		_ = il.prog.Wait(ctx)
		cancel()
	}
	s.why.mu.Lock()
	if s.why.runs == nil {
		s.why.runs = map[string]*runPage{}
	}
	page := s.why.runs[key]
	if page == nil || page.ring != ring {
		page = &runPage{ring: ring}
		s.why.runs[key] = page
	}
	if ring != nil {
		var lines []logs.Line
		lines, page.mark = ring.Since(page.mark)
		rec.Stdout, rec.Stderr, rec.Truncated = runTail(lines, tailLines(spec))
	}
	page.last = rec
	s.why.mu.Unlock()

	s.events.addRun(key, runSummary(rec), rec)
}

func tailLines(spec *config.Program) int {
	if spec.ExitTailLines > 0 {
		return spec.ExitTailLines
	}
	return config.DefaultExitTailLines
}

// runTail returns the last n lines of each stream among lines, each line
// cut to tailLineBytes and each stream to tailStreamBytes; truncated says
// something was cut or left out.
func runTail(lines []logs.Line, n int) (stdout, stderr []string, truncated bool) {
	var outBytes, errBytes int
	// Newest first, so that the bounds keep the end of the run.
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		var dst *[]string
		var used *int
		switch l.Stream {
		case logs.Stdout:
			dst, used = &stdout, &outBytes
		case logs.Stderr:
			dst, used = &stderr, &errBytes
		default: // a hook's output, a lag marker
			continue
		}
		if len(*dst) >= n || *used >= tailStreamBytes {
			truncated = true
			continue
		}
		text := l.Text
		if len(text) > tailLineBytes {
			text = cutUTF8(text, tailLineBytes) + "…"
			truncated = true
		}
		*used += len(text)
		*dst = append(*dst, text)
	}
	reverse(stdout)
	reverse(stderr)
	return stdout, stderr, truncated
}

func reverse(s []string) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// cutUTF8 returns at most n bytes of s, not splitting a character.
func cutUTF8(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// runSummary is the one line an event gives a run's end: "exit 1
// (Error) after 2.5s" or "signal KILL (OOMKilled) after 1m0s".
func runSummary(r *ctl.RunRecord) string {
	what := fmt.Sprintf("exit %d", r.Code)
	switch {
	case r.Signal != "":
		what = fmt.Sprintf("signal %s (status %d)", r.Signal, r.Status)
	case r.Status < 0:
		what = "did not start"
	}
	msg := fmt.Sprintf("run ended: %s, %s", what, r.Reason)
	if r.StartedAt != nil {
		msg += fmt.Sprintf(", after %v", time.Duration(r.DurationMs)*time.Millisecond)
	}
	return msg
}

// Why reports how each named instance (every one when names is empty)
// last ended, with its restarts and the backoff left now.
func (s *Supervisor) Why(ctx context.Context, names []string) ([]ctl.Why, error) {
	s.mu.Lock()
	keys := s.sortedKeysLocked()
	if len(names) > 0 {
		var err error
		if keys, err = s.resolveLocked(names); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	now := s.clock.Now()
	out := make([]ctl.Why, 0, len(keys))
	for _, k := range keys {
		in := s.instances[k]
		w := ctl.Why{Name: k, State: string(in.state), Restarts: in.restarts}
		if in.state == CrashLoopBackOff && !in.nextStart.IsZero() {
			w.BackoffMs = max(in.nextStart.Sub(now).Milliseconds(), 0)
		}
		out = append(out, w)
	}
	all := len(names) == 0
	s.mu.Unlock()
	s.why.mu.Lock()
	defer s.why.mu.Unlock()
	if all {
		s.why.pruneLocked(keys)
	}
	for i := range out {
		if p := s.why.runs[out[i].Name]; p != nil && p.last != nil {
			r := *p.last // the slices are never written again
			out[i].LastRun = &r
		}
	}
	return out, nil
}
