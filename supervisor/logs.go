package supervisor

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/user"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/logs"
)

// logSet owns the console every program shares, and per instance key the
// ring of its last lines (which outlives restarts and reloads) and the
// router of its output.
type logSet struct {
	console *logs.Console
	files   *logs.Files // one writer per log path, shared by instances and programs
	log     *slog.Logger
	// refused, when set, hears of a log file that could not be opened
	// (set once, before the first program starts).
	refused func(key string, err error)
	// oneStream: console-only programs get one pipe for both streams
	// (Options.OneStream). Set before any program starts.
	oneStream bool
	tty       bool // and a pseudo-terminal instead of the pipe (Options.Tty)

	// closing holds the routers being closed in the background (replaced
	// or removed); close waits for them.
	closing sync.WaitGroup

	mu        sync.Mutex
	ringBytes int // MaxBytes of each ring; guarded by mu
	rings     map[string]*logs.Ring
	progs     map[string]*instLogs
}

// instLogs is the output routing of one instance.
type instLogs struct {
	key     string
	outputs outputs
	prog    *logs.Program
	ring    *logs.Ring
	merged  bool // one pipe for stdout and stderr (stderr = "stdout", or Options.OneStream)
	tty     bool // a pseudo-terminal for both
	// borrowed: ring is another key's (a job's run beside its instance
	// logs into the job's), which outlives this router.
	borrowed bool
	// adopted is closed once the pipes of the router this one replaced
	// are in (at once when it replaced none): a router hands its pipes on,
	// or closes, only after, so none is left behind in a closed one.
	adopted chan struct{}
}

type programLogs = *instLogs

// outputs are what a router is made from: a change makes a new one.
type outputs struct {
	stdout, stderr config.Output
	toStdout       bool
}

func outputsOf(p *config.Program) outputs {
	return outputs{p.Stdout, p.Stderr, p.StderrToStdout}
}

func newLogSet(w io.Writer, color, terminal, timestamps bool, log *slog.Logger, programs []*config.Program) *logSet {
	mode := logs.ColorNever
	if color {
		mode = logs.ColorAlways
	}
	var names []string
	for _, p := range programs {
		names = append(names, instanceKeys(p)...)
	}
	return &logSet{
		console: logs.NewConsole(w, logs.ConsoleConfig{Color: mode, Names: names, Terminal: terminal, Timestamps: timestamps}),
		files:   logs.NewFiles(),
		log:     log,
		rings:   map[string]*logs.Ring{},
		progs:   map[string]*instLogs{},
	}
}

func output(o config.Output, user *logs.Ident) logs.Output {
	return logs.Output{Console: o.Console, File: logs.FileConfig{Path: o.File, MaxSize: o.MaxSize, MaxFiles: o.MaxFiles, User: user, Timestamps: o.Timestamps}}
}

// programIdent is the user p runs as, when it is another one than the
// supervisor's: a log directory it owns is accepted, any other it can
// write is refused. An unknown name gives nil (the start will fail and
// say so).
func programIdent(p *config.Program) *logs.Ident {
	if p.User == "" {
		return nil
	}
	u, err := user.Lookup(p.User)
	if err != nil {
		if u, err = user.LookupId(p.User); err != nil {
			return nil
		}
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil || uid == os.Geteuid() {
		return nil
	}
	if p.Group != "" {
		if g, err := user.LookupGroup(p.Group); err == nil {
			gid, _ = strconv.Atoi(g.Gid)
		} else if g, err := user.LookupGroupId(p.Group); err == nil {
			gid, _ = strconv.Atoi(g.Gid)
		}
	}
	return &logs.Ident{UID: uid, GID: gid}
}

// forKey returns the router of key for spec p: the current one when the
// outputs did not change, else a new one on the same ring (the old one
// hands its pipes over to it and closes in the background).
func (l *logSet) forKey(p *config.Program, key string) *instLogs {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.progs[key]
	if old != nil && old.outputs == outputsOf(p) {
		return old
	}
	ring := l.rings[key]
	if ring == nil {
		ring = logs.NewRing(logs.RingConfig{Program: key, MaxBytes: l.ringBytes})
		l.rings[key] = ring
	}
	return l.newRouterLocked(p, key, ring, old)
}

// forRun returns a new router for key, a job's run beside its instance,
// on that instance's ring: the run's lines, tagged with key, stay in the
// job's log once the run is gone.
func (l *logSet) forRun(p *config.Program, key string, first *instLogs) *instLogs {
	l.mu.Lock()
	defer l.mu.Unlock()
	il := l.newRouterLocked(p, key, first.ring, l.progs[key])
	il.borrowed = true
	return il
}

// newRouterLocked makes and records key's router for p on ring; old, the
// one it replaces, hands its pipes over to it and closes, in the
// background.
func (l *logSet) newRouterLocked(p *config.Program, key string, ring *logs.Ring, old *instLogs) *instLogs {
	id := programIdent(p)
	cfg := logs.ProgramConfig{Name: key, Console: l.console, Ring: ring, Stdout: output(p.Stdout, id), Stderr: output(p.Stderr, id), Files: l.files, Logger: l.log}
	if p.StderrToStdout {
		// The stderr of a process started before the streams were merged
		// (one adopted across an upgrade) goes where stdout goes too.
		cfg.Stderr = cfg.Stdout
	}
	prog, err := logs.NewProgram(cfg)
	if err != nil {
		// A log file that cannot be opened must not keep the program down:
		// its lines still reach the console and the ring.
		l.log.Error("opening log files; logging to the console only", "program", key, "err", err)
		if l.refused != nil {
			l.refused(key, err)
		}
		cfg.Stdout.File, cfg.Stderr.File = logs.FileConfig{}, logs.FileConfig{}
		cfg.Stdout.Console, cfg.Stderr.Console = true, true
		prog, _ = logs.NewProgram(cfg)
	}
	consoleOnly := func(o config.Output) bool { return o.Console && o.File == "" }
	// A dev runner's console-only program gets one channel as well: its
	// lines keep their order on the terminal, and --tty gives it a
	// terminal (never to a program that writes a file).
	devOne := l.oneStream && consoleOnly(p.Stdout) && (p.StderrToStdout || consoleOnly(p.Stderr))
	merged := p.StderrToStdout || devOne
	il := &instLogs{key: key, outputs: outputsOf(p), prog: prog, ring: ring, merged: merged, tty: devOne && l.tty, adopted: make(chan struct{})}
	l.progs[key] = il
	if old != nil {
		l.closing.Go(func() { old.handOver(il, l.log) })
	} else {
		close(il.adopted)
	}
	return il
}

// handOver moves the pipes of il still open, a running process's, to to
// (their lines go where to says from the next read on, the start of a
// line read already included), then closes il. Closing them instead would
// end the process at its next write, with SIGPIPE.
func (il *instLogs) handOver(to *instLogs, log *slog.Logger) {
	<-il.adopted
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	ds, err := il.prog.Detach(ctx)
	cancel()
	if err != nil {
		// A pump stuck on a sink: close drains it a while longer, then
		// gives up on its pipe.
		log.Warn("moving a process's output to its new log settings", "program", il.key, "err", err)
	}
	for _, d := range ds {
		to.prog.Adopt(d.Stream, d.File, d.Pending)
	}
	close(to.adopted)
	il.close()
}

// pipes makes the stdout and stderr pipes of a process about to start:
// the same file twice when the streams are merged.
func (il *instLogs) pipes() (stdout, stderr *os.File, err error) {
	if il.tty {
		if stdout, err = il.prog.NewPty(logs.Stdout); err != nil {
			return nil, nil, err
		}
		return stdout, stdout, nil
	}
	if stdout, err = il.prog.NewPipe(logs.Stdout); err != nil {
		return nil, nil, err
	}
	if il.merged {
		return stdout, stdout, nil
	}
	if stderr, err = il.prog.NewPipe(logs.Stderr); err != nil {
		stdout.Close()
		return nil, nil, err
	}
	return stdout, stderr, nil
}

// resize gives every program's pseudo-terminal (--tty) the size ws and
// returns the keys of the routers whose program must be told with a
// SIGWINCH.
func (l *logSet) resize(ws logs.WinSize) []string {
	l.mu.Lock()
	routers := make([]*instLogs, 0, len(l.progs))
	for _, il := range l.progs {
		routers = append(routers, il)
	}
	l.mu.Unlock()
	var tell []string
	for _, il := range routers {
		if il.prog.Resize(ws) {
			tell = append(tell, il.key)
		}
	}
	return tell
}

// hookWriter logs a hook's output as lines of the stream named after it.
func (il *instLogs) hookWriter(phase string) io.WriteCloser { return il.prog.Writer(phase) }

// close drains the pipes (bounded: a daemonized child holding a pipe must
// not hold the supervisor) and closes the files.
func (il *instLogs) close() {
	<-il.adopted
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = il.prog.Close(ctx)
}

// remove forgets il, the router of a key gone from the config, at once,
// and returns what closes it (and its ring, unless borrowed) for the caller
// to run in the background: a key added back meanwhile (a scale down then
// up) must get a router of its own, not this one being closed. A router
// that replaced il under key since (a job's run that took the key again)
// stays, and closes il itself.
func (l *logSet) remove(key string, il *instLogs) (closeIt func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.progs[key] != il {
		return func() {}
	}
	delete(l.progs, key)
	if !il.borrowed {
		delete(l.rings, key)
	}
	return func() {
		il.close()
		if !il.borrowed {
			il.ring.Close()
		}
	}
}

// setRingBytes bounds every ring, present and future, to n bytes.
func (l *logSet) setRingBytes(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ringBytes = n
	for _, r := range l.rings {
		r.SetMaxBytes(n)
	}
}

// close closes every router and flushes the console.
func (l *logSet) close() {
	l.mu.Lock()
	progs := make([]*instLogs, 0, len(l.progs))
	for _, p := range l.progs {
		progs = append(progs, p)
	}
	l.progs = map[string]*instLogs{}
	l.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range progs {
		wg.Go(p.close)
	}
	wg.Wait()
	l.closing.Wait()
	_ = l.console.Flush()
}

// mergeLogs streams the last n lines of every source in time order and,
// with follow, every new line until ctx ends.
func mergeLogs(ctx context.Context, sources []*instLogs, n int, follow bool, done func()) <-chan logs.Line {
	out := make(chan logs.Line, 64)
	if !follow {
		var all []logs.Line
		for _, s := range sources {
			all = append(all, s.ring.Last(n)...)
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
		if n > 0 && len(all) > n {
			all = all[len(all)-n:]
		}
		go func() {
			defer done()
			defer close(out)
			for _, l := range all {
				select {
				case out <- l:
				case <-ctx.Done():
					return
				}
			}
		}()
		return out
	}
	var wg sync.WaitGroup
	for _, s := range sources {
		lines, cancel := s.ring.Follow(ctx, n)
		wg.Go(func() {
			defer cancel()
			for l := range lines {
				select {
				case out <- l:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(out); done() }()
	return out
}
