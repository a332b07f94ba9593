package ctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/logs"
)

// memBackend is a Backend that keeps its programs in memory: the protocol
// tests drive a real implementation of the interface, not a stub.
type memBackend struct {
	logRing    int // lines kept per program
	followBuf  int // buffer of a follower before it is cut off
	streams    atomic.Int64
	restartGap chan struct{} // when set, Restart waits for a receive on it (or ctx)

	mu        sync.Mutex
	order     []string               // guarded by mu
	progs     map[string]*memProgram // guarded by mu
	nextPid   int                    // guarded by mu
	events    []Event                // guarded by mu
	followers map[*memFollower]bool  // guarded by mu
	signals   []string               // guarded by mu: "name:SIG"
	reloads   int                    // guarded by mu
	shutdowns int                    // guarded by mu
	scaled    []scaleCall            // guarded by mu
	stopped   []StopOptions          // guarded by mu
}

type memProgram struct {
	status ProgramStatus
	lines  []logs.Line
}

// memFollower is one following stream: lines or events, for some programs.
type memFollower struct {
	names map[string]bool // nil: every program
	lines chan logs.Line
	evs   chan Event
}

func newMemBackend(names ...string) *memBackend {
	b := &memBackend{logRing: 100, followBuf: 256, progs: map[string]*memProgram{}, nextPid: 1000,
		followers: map[*memFollower]bool{}}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, n := range names {
		b.order = append(b.order, n)
		b.nextPid++
		started := t0
		b.progs[n] = &memProgram{status: ProgramStatus{Name: n, State: "Running", Pid: b.nextPid, StartedAt: &started,
			MemoryBytes: 1 << 20, CPUSeconds: 0.25}}
	}
	return b
}

// resolveLocked turns names into program names as the supervisor does:
// "all" is every program, an unknown name is ErrUnknownProgram.
func (b *memBackend) resolveLocked(names []string, emptyIsAll bool) ([]string, error) {
	if len(names) == 0 {
		if emptyIsAll {
			return slices.Clone(b.order), nil
		}
		return nil, errors.New("no program named")
	}
	var out []string
	for _, n := range names {
		switch {
		case n == "all":
			out = append(out, b.order...)
		case b.progs[n] != nil:
			out = append(out, n)
		default:
			return nil, fmt.Errorf("%w %q", ErrUnknownProgram, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (b *memBackend) Status(ctx context.Context, names []string) ([]ProgramStatus, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	keys, err := b.resolveLocked(names, true)
	if err != nil {
		return nil, err
	}
	out := make([]ProgramStatus, 0, len(keys))
	for _, k := range keys {
		out = append(out, b.progs[k].status)
	}
	return out, nil
}

func (b *memBackend) Why(ctx context.Context, names []string) ([]Why, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	keys, err := b.resolveLocked(names, true)
	if err != nil {
		return nil, err
	}
	out := make([]Why, 0, len(keys))
	for _, k := range keys {
		st := b.progs[k].status
		out = append(out, Why{Name: st.Name, State: st.State, Restarts: st.Restarts})
	}
	return out, nil
}

func (b *memBackend) setState(ctx context.Context, names []string, to string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	keys, err := b.resolveLocked(names, false)
	if err != nil {
		return err
	}
	for _, k := range keys {
		p := b.progs[k]
		from := p.status.State
		switch to {
		case "Running":
			b.nextPid++
			now := time.Now()
			p.status.Pid, p.status.StartedAt, p.status.NextStartInMs = b.nextPid, &now, 0
		case "Stopped":
			p.status.Pid, p.status.StartedAt = 0, nil
			p.status.LastExit = &ExitInfo{Signal: "TERM", Reason: "Signaled", FinishedAt: time.Now()}
		}
		p.status.State = to
		b.eventLocked(Event{Time: time.Now(), Program: k, From: from, To: to})
		b.logLocked(k, "stdout", "now "+to)
	}
	return nil
}

func (b *memBackend) Start(ctx context.Context, names []string, _ WaitOptions) error {
	return b.setState(ctx, names, "Running")
}

// Scale records what it was asked: the protocol, not the scaling, is under
// test here.
func (b *memBackend) Scale(ctx context.Context, counts map[string]int, opts WaitOptions) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name := range counts {
		if _, ok := b.progs[name]; !ok {
			return fmt.Errorf("%w %q", ErrUnknownProgram, name)
		}
	}
	b.scaled = append(b.scaled, scaleCall{counts, opts})
	return nil
}

type scaleCall struct {
	counts map[string]int
	opts   WaitOptions
}

func (b *memBackend) Stop(ctx context.Context, names []string, opts StopOptions) error {
	b.mu.Lock()
	b.stopped = append(b.stopped, opts)
	b.mu.Unlock()
	return b.setState(ctx, names, "Stopped")
}

func (b *memBackend) Restart(ctx context.Context, names []string, _ RestartOptions) error {
	if b.restartGap != nil {
		select {
		case <-b.restartGap:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	b.mu.Lock()
	keys, err := b.resolveLocked(names, false)
	if err != nil {
		b.mu.Unlock()
		return err
	}
	for _, k := range keys {
		b.progs[k].status.Restarts++
	}
	b.mu.Unlock()
	return b.setState(ctx, names, "Running")
}

func (b *memBackend) Signal(ctx context.Context, sig syscall.Signal, names []string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	keys, err := b.resolveLocked(names, false)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if b.progs[k].status.Pid == 0 {
			return fmt.Errorf("%q is not running", k)
		}
		b.signals = append(b.signals, k+":"+unixsig.Name(sig))
	}
	return nil
}

func (b *memBackend) Reload(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reloads++
	return nil
}

func (b *memBackend) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shutdowns++
	return nil
}

// appendLog is how a program "writes" a line.
func (b *memBackend) appendLog(program, stream, text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.logLocked(program, stream, text)
}

func (b *memBackend) logLocked(program, stream, text string) {
	p := b.progs[program]
	l := logs.Line{Program: program, Stream: stream, Time: time.Now(), Text: text}
	p.lines = append(p.lines, l)
	if len(p.lines) > b.logRing {
		p.lines = p.lines[len(p.lines)-b.logRing:]
	}
	for f := range b.followers {
		if f.lines == nil || (f.names != nil && !f.names[program]) {
			continue
		}
		select {
		case f.lines <- l:
		default: // too slow: cut off, as the supervisor does
			delete(b.followers, f)
			close(f.lines)
		}
	}
}

func (b *memBackend) eventLocked(ev Event) {
	b.events = append(b.events, ev)
	for f := range b.followers {
		if f.evs == nil {
			continue
		}
		select {
		case f.evs <- ev:
		default:
			delete(b.followers, f)
			close(f.evs)
		}
	}
}

func (b *memBackend) Logs(ctx context.Context, names []string, n int, follow bool) (<-chan logs.Line, error) {
	b.mu.Lock()
	keys, err := b.resolveLocked(names, true)
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	var hist []logs.Line
	for _, k := range keys {
		ls := b.progs[k].lines
		if n >= 0 && len(ls) > n {
			ls = ls[len(ls)-n:]
		}
		hist = append(hist, ls...)
	}
	slices.SortStableFunc(hist, func(a, c logs.Line) int { return a.Time.Compare(c.Time) })
	var f *memFollower
	if follow {
		f = &memFollower{names: map[string]bool{}, lines: make(chan logs.Line, b.followBuf)}
		for _, k := range keys {
			f.names[k] = true
		}
		b.followers[f] = true
	}
	b.mu.Unlock()
	return streamOut(b, ctx, hist, f, func(f *memFollower) chan logs.Line { return f.lines }), nil
}

func (b *memBackend) Events(ctx context.Context, follow bool) (<-chan Event, error) {
	b.mu.Lock()
	hist := slices.Clone(b.events)
	var f *memFollower
	if follow {
		f = &memFollower{evs: make(chan Event, b.followBuf)}
		b.followers[f] = true
	}
	b.mu.Unlock()
	return streamOut(b, ctx, hist, f, func(f *memFollower) chan Event { return f.evs }), nil
}

// streamOut sends hist, then what f receives, until ctx ends; it closes the
// returned channel either way. b.streams counts the goroutines alive.
func streamOut[T any](b *memBackend, ctx context.Context, hist []T, f *memFollower, live func(*memFollower) chan T) <-chan T {
	out := make(chan T)
	b.streams.Add(1)
	go func() {
		defer b.streams.Add(-1)
		defer close(out)
		if f != nil {
			defer func() {
				b.mu.Lock()
				if b.followers[f] {
					delete(b.followers, f)
					close(live(f))
				}
				b.mu.Unlock()
			}()
		}
		for _, v := range hist {
			select {
			case out <- v:
			case <-ctx.Done():
				return
			}
		}
		if f == nil {
			return
		}
		for {
			select {
			case v, ok := <-live(f):
				if !ok {
					return
				}
				select {
				case out <- v:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func (b *memBackend) restarts(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.progs[name].status.Restarts
}

func (b *memBackend) followerCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.followers)
}
