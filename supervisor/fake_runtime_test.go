package supervisor

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/clock"
	"github.com/supervise-dev/supervise/clock/fakeclock"
	"github.com/supervise-dev/supervise/proc"
)

// fakeRuntime is an in-memory proc for controller tests on a fake clock:
// processes never run, the test decides when and how they exit.
type fakeRuntime struct {
	clock clock.Clock

	mu         sync.Mutex
	next       int
	procs      map[string]*fakeProc
	sandboxes  map[string]bool
	execs      []string // hook commands, in order
	execsBy    []string // hook commands with their SUPERVISE_INSTANCE: "drain 2"
	resets     int
	ignoreTerm map[string]bool // program name → its processes ignore the stop signal
	termExit0  map[string]bool // program name → its processes trap the stop signal and exit 0
	created    map[string]int  // sandbox name → sandboxes created
	execFail   map[string]bool
	execFailN  map[string]int // command → its next runs that fail
	// execTakes: command → how long its runs take on the fake clock (the
	// clock is stepped from inside Exec).
	execTakes  map[string]time.Duration
	starts     map[string][]time.Time // sandbox name → start times
	events     chan proc.ExitEvent
	failStart  map[string]int                // program name → its next starts that fail (EMFILE)
	selfPid    map[string]bool               // program name → its processes have the test's pid, so it can speak for them (sd_notify)
	configs    map[string]proc.ProcessConfig // program name → the config of its last process
	failDelete int                           // the next DeleteSandbox calls that fail
	// blockCreate: sandbox name → CreateSandbox waits until it is closed.
	blockCreate map[string]chan struct{}
	// blockExec: command → Exec waits until it is closed, or until its
	// sandbox is deleted, which kills it as a cgroup's removal would
	// (goneExec records the command).
	blockExec map[string]chan struct{}
	goneExec  []string
	deleted   chan struct{} // closed and replaced by every DeleteSandbox
	// holdExits keeps exit events back (held) until releaseExits: proc
	// may report an exit well after the process is gone.
	holdExits  bool
	held       []proc.ExitEvent
	graceWaits int // Stop calls that waited out a grace on the clock
	// signalled: process id → the signals sent to it, whatever its state.
	signalled map[string][]syscall.Signal
}

type fakeProc struct {
	id, sandbox, name string
	state             proc.State
	pid               int
	started, finished time.Time
	code              int
	sig               syscall.Signal
	ignoreStop        bool
}

func newFakeRuntime(clk clock.Clock) *fakeRuntime {
	return &fakeRuntime{
		clock:     clk,
		procs:     map[string]*fakeProc{},
		sandboxes: map[string]bool{},
		created:   map[string]int{},
		execFail:  map[string]bool{},
		starts:    map[string][]time.Time{},
		failStart: map[string]int{},
		selfPid:   map[string]bool{},
		termExit0: map[string]bool{},
		execFailN: map[string]int{},
		configs:   map[string]proc.ProcessConfig{},
		events:    make(chan proc.ExitEvent, 1024),
		signalled: map[string][]syscall.Signal{},
	}
}

func (f *fakeRuntime) CreateSandbox(ctx context.Context, cfg proc.SandboxConfig) (string, error) {
	f.mu.Lock()
	block := f.blockCreate[cfg.Name]
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.created[cfg.Name]++
	id := fmt.Sprintf("sb%d-%s", f.next, cfg.Name)
	f.sandboxes[id] = true
	return id, nil
}

func (f *fakeRuntime) DeleteSandbox(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failDelete > 0 {
		f.failDelete--
		return fmt.Errorf("deleting sandbox %s: open cgroup.procs: %w", id, syscall.EMFILE)
	}
	delete(f.sandboxes, id)
	if f.deleted != nil {
		close(f.deleted)
		f.deleted = nil
	}
	return nil
}

// deletedLocked is a channel closed at the next DeleteSandbox.
func (f *fakeRuntime) deletedLocked() chan struct{} {
	if f.deleted == nil {
		f.deleted = make(chan struct{})
	}
	return f.deleted
}

func (f *fakeRuntime) ResetSandbox(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.sandboxes[id] {
		return proc.ErrNotFound
	}
	f.resets++
	return nil
}

func (f *fakeRuntime) SandboxStatus(id string) (proc.SandboxStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.sandboxes[id] {
		return proc.SandboxStatus{}, proc.ErrNotFound
	}
	return proc.SandboxStatus{ID: id, State: proc.SandboxReady}, nil
}

func (f *fakeRuntime) Create(ctx context.Context, sid string, cfg proc.ProcessConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.sandboxes[sid] {
		return "", fmt.Errorf("sandbox %s: %w", sid, proc.ErrNotFound)
	}
	f.next++
	id := fmt.Sprintf("p%d", f.next)
	name := cfg.Args[0]
	// The child's copies of the descriptors, as a fork makes them: the
	// supervisor closes its own once the process started.
	if len(cfg.ExtraFiles) > 0 {
		extra := make(map[int]*os.File, len(cfg.ExtraFiles))
		for n, file := range cfg.ExtraFiles {
			if fd, err := syscall.Dup(int(file.Fd())); err == nil {
				extra[n] = os.NewFile(uintptr(fd), file.Name())
			}
		}
		cfg.ExtraFiles = extra
	}
	f.configs[name] = cfg
	f.procs[id] = &fakeProc{id: id, sandbox: sid, name: name, state: proc.StateCreated, ignoreStop: f.ignoreTerm[name]}
	return id, nil
}

func (f *fakeRuntime) Start(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.procs[id]
	if p.name == "missing" {
		return fmt.Errorf("exec %q: executable file not found in $PATH", p.name)
	}
	if f.failStart[p.name] > 0 {
		f.failStart[p.name]--
		return fmt.Errorf("open /dev/null: %w", syscall.EMFILE)
	}
	p.state = proc.StateRunning
	p.started = f.clock.Now()
	p.pid = 1000 + f.next
	if f.selfPid[p.name] {
		p.pid = os.Getpid()
	}
	f.next++
	f.starts[p.name] = append(f.starts[p.name], p.started)
	return nil
}

// exit makes the running process of program name exit with code.
func (f *fakeRuntime) exit(name string, code int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.procs {
		if p.name == name && p.state == proc.StateRunning {
			f.exitLocked(p, code, 0)
			return true
		}
	}
	return false
}

// exitOOM makes the running process of program name die of the OOM killer.
func (f *fakeRuntime) exitOOM(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.procs {
		if p.name == name && p.state == proc.StateRunning {
			p.state, p.finished, p.code, p.sig = proc.StateExited, f.clock.Now(), -1, syscall.SIGKILL
			f.events <- proc.ExitEvent{ID: p.id, SandboxID: p.sandbox, Pid: p.pid, ExitCode: -1, Signal: syscall.SIGKILL,
				Reason: proc.ReasonOOMKilled, StartedAt: p.started, FinishedAt: p.finished}
			return true
		}
	}
	return false
}

func (f *fakeRuntime) exitLocked(p *fakeProc, code int, sig syscall.Signal) {
	p.state = proc.StateExited
	p.finished = f.clock.Now()
	p.code, p.sig = code, sig
	reason := proc.ReasonCompleted
	switch {
	case sig != 0:
		reason = proc.ReasonSignaled
	case code != 0:
		reason = proc.ReasonError
	}
	ev := proc.ExitEvent{ID: p.id, SandboxID: p.sandbox, Pid: p.pid, ExitCode: code, Signal: sig,
		Reason: reason, StartedAt: p.started, FinishedAt: p.finished}
	if f.holdExits {
		f.held = append(f.held, ev)
		return
	}
	f.events <- ev
}

// releaseExits reports the exits held back so far, and every later one.
func (f *fakeRuntime) releaseExits() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holdExits = false
	for _, ev := range f.held {
		f.events <- ev
	}
	f.held = nil
}

func (f *fakeRuntime) Signal(id string, sig syscall.Signal) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signalled[id] = append(f.signalled[id], sig)
	p := f.procs[id]
	if p == nil || p.state != proc.StateRunning {
		return proc.ErrNotFound
	}
	switch {
	case sig != syscall.SIGKILL && f.termExit0[p.name]:
		f.exitLocked(p, 0, 0)
	case sig == syscall.SIGKILL || !p.ignoreStop:
		f.exitLocked(p, -1, sig)
	}
	return nil
}

// Stop is proc's: the stop signal, then up to grace (on the fake clock)
// for the exit, then SIGKILL.
func (f *fakeRuntime) Stop(ctx context.Context, id string, grace time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.procs[id]
	if p == nil {
		return proc.ErrNotFound
	}
	if grace > 0 && p.state == proc.StateRunning {
		switch {
		case f.termExit0[p.name]:
			f.exitLocked(p, 0, 0)
		case !p.ignoreStop:
			f.exitLocked(p, -1, syscall.SIGTERM)
		default:
			f.graceWaits++
			f.mu.Unlock()
			select {
			case <-f.clock.After(grace):
			case <-ctx.Done():
			}
			f.mu.Lock()
		}
	}
	if p.state == proc.StateRunning {
		f.exitLocked(p, -1, syscall.SIGKILL)
	}
	return nil
}

func (f *fakeRuntime) Remove(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.procs, id)
	return nil
}

func (f *fakeRuntime) Status(id string) (proc.ProcessStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.procs[id]
	if p == nil {
		return proc.ProcessStatus{}, proc.ErrNotFound
	}
	return proc.ProcessStatus{ID: id, SandboxID: p.sandbox, State: p.state, Pid: p.pid, StartedAt: p.started,
		FinishedAt: p.finished, ExitCode: p.code, Signal: p.sig}, nil
}

// Usage takes the lock as proc's does (its lookup of the sandbox): a
// frozen runtime holds it.
func (f *fakeRuntime) Usage(id string) (proc.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return proc.Stats{MemoryBytes: 1 << 20}, nil
}

func (f *fakeRuntime) Exec(ctx context.Context, sid string, cfg proc.ExecConfig) (proc.ExecResult, error) {
	f.mu.Lock()
	block := f.blockExec[cfg.Args[0]]
	for block != nil && f.sandboxes[sid] {
		deleted := f.deletedLocked()
		f.mu.Unlock()
		select {
		case <-block:
			block = nil
		case <-deleted:
		}
		f.mu.Lock()
	}
	defer f.mu.Unlock()
	cmd := cfg.Args[0]
	if f.blockExec[cmd] != nil && sid != "" && !f.sandboxes[sid] {
		f.goneExec = append(f.goneExec, cmd)
		return proc.ExecResult{}, fmt.Errorf("exec in sandbox %q: %w", sid, proc.ErrNotFound)
	}
	f.execs = append(f.execs, cmd)
	for _, kv := range cfg.Env {
		if inst, ok := strings.CutPrefix(kv, "SUPERVISE_INSTANCE="); ok {
			f.execsBy = append(f.execsBy, cmd+" "+inst)
		}
	}
	if f.execFail[cmd] {
		return proc.ExecResult{ExitCode: 1}, nil
	}
	if d := f.execTakes[cmd]; d > 0 {
		f.clock.(*fakeclock.Clock).Step(d)
	}
	if f.execFailN[cmd] > 0 {
		f.execFailN[cmd]--
		return proc.ExecResult{ExitCode: 1}, nil
	}
	return proc.ExecResult{}, nil
}

func (f *fakeRuntime) Events() <-chan proc.ExitEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.events
}

func (f *fakeRuntime) startTimes(name string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.starts[name]...)
}

// hookLogByInstance is hookLog with the SUPERVISE_INSTANCE of each run:
// "drain 2".
func (f *fakeRuntime) hookLogByInstance() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.execsBy...)
}

func (f *fakeRuntime) hookLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.execs...)
}
