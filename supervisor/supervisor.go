// Package supervisor is the controller: a small kubelet. It holds the desired
// state of every program instance (the config plus what the user asked) and
// closes the gap to the actual state (what proc reports) one restart intent at
// a time. Every intent — an exit, a backoff expiry, a command, a reload — is a
// key on a rate-limited, deduplicating work queue, processed by workers that
// run under wait.Until and never return on an error.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/clock"
	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/hooks"
	"github.com/supervise-dev/supervise/proc"
	"github.com/supervise-dev/supervise/supervisor/wait"
	"github.com/supervise-dev/supervise/supervisor/workqueue"
)

// Runtime is what the controller needs of the sandbox runtime;
// *proc.Runtime implements it.
type Runtime interface {
	CreateSandbox(ctx context.Context, cfg proc.SandboxConfig) (string, error)
	DeleteSandbox(ctx context.Context, id string) error
	ResetSandbox(ctx context.Context, id string) error
	SandboxStatus(id string) (proc.SandboxStatus, error)
	Create(ctx context.Context, sandboxID string, cfg proc.ProcessConfig) (string, error)
	Start(ctx context.Context, id string) error
	Signal(id string, sig syscall.Signal) error
	Stop(ctx context.Context, id string, grace time.Duration) error
	Remove(ctx context.Context, id string) error
	Status(id string) (proc.ProcessStatus, error)
	Usage(sandboxID string) (proc.Stats, error) // memory and CPU
	Exec(ctx context.Context, sandboxID string, cfg proc.ExecConfig) (proc.ExecResult, error)
	Events() <-chan proc.ExitEvent
}

// queue is the part of the work queue the controller uses.
type queue interface {
	Add(key string)
	AddAfter(key string, d time.Duration)
	AddRateLimited(key string)
	Forget(key string)
	NumRequeues(key string) int
	Get() (key string, shutdown bool)
	Done(key string)
	Len() int
	ShutDown()
	Stats() workqueue.Stats
}

// Options configure a Supervisor. Config and Runtime are required.
type Options struct {
	Config  *config.Config
	Runtime Runtime
	Clock   clock.Clock  // nil: the real clock
	Logger  *slog.Logger // nil: slog.Default()
	Console io.Writer    // programs' console output; nil: os.Stdout
	// Load reads the config file again for a reload; nil: config.Load.
	Load  func(path string) (*config.Config, error)
	Color bool // colour the console prefixes
	// Terminal: the console is a terminal; what in program lines would
	// drive it is escaped (colours kept).
	Terminal bool
	// Timestamps starts each console line with the time (the dev
	// runner's --timestamps).
	Timestamps bool
	// OneStream gives a program whose stdout and stderr both go to the
	// console and to no file one pipe for both, as foreman does, so its
	// lines keep the order it wrote them in; they are all logged as
	// stdout. Two pipes cannot keep that order: each has its own reader.
	// The dev runner's; a service keeps its streams apart unless a
	// program asks for one pipe itself (stderr = "stdout").
	OneStream bool
	// Tty, with OneStream, gives such a program a pseudo-terminal instead
	// of the pipe, as overmind does: it sees a terminal and prints its
	// colours.
	Tty bool
	// StartupGrace is how long after its start a process may still print
	// its first line when an exit_on program's end stops the set (the
	// dev runner's: a fast one-shot must not silence its neighbours); 0
	// stops at once.
	StartupGrace time.Duration
	// Adopt is the state of the binary this one replaced by an upgrade in
	// place, and AdoptFiles the descriptors it names by number: the
	// instances take their processes, pipes and sockets back instead of
	// starting. New takes ownership of the files it uses.
	Adopt      *Handover
	AdoptFiles map[int]*os.File
	// Ready, when set, is called once, on a goroutine of its own, when
	// every autostart program first is ready or has completed (when
	// systemd hears READY=1): the start-up is over.
	Ready func()
}

// Supervisor runs a set of programs.
type Supervisor struct {
	rt     Runtime
	load   func(path string) (*config.Config, error)
	clock  clock.Clock
	log    *slog.Logger
	queue  queue
	hooks  *hooks.Runner
	logs   *logSet
	events *eventLog
	why    runBook // each instance's last ended run (why.go)

	bootedAt  time.Time      // for the spread of first probes
	randFloat func() float64 // [0, 1); tests replace it

	startupGrace time.Duration // Options.StartupGrace
	onReady      func()        // Options.Ready

	ctx    context.Context // cancelled by Kill: aborts every blocking call
	cancel context.CancelFunc
	// bg holds work started off a caller's path (removing a program's
	// logs, syncing file watchers); Run waits for it before returning.
	bg sync.WaitGroup
	// streams feed logs and events to clients; Run ends and waits for them.
	streams *streamSet

	mu           sync.Mutex
	cfg          *config.Config
	instances    map[string]*instance
	byProgram    map[string]map[string]*instance // program name → its instances (index.go)
	byProc       map[string]*instance            // process id → its instance (index.go)
	dependents   map[string][]string             // program → programs that depend on it
	level        map[string]int                  // dependency depth per program name
	rollouts     map[string]*rolloutRun          // per program, the rollout under way
	scaled       map[string]int                  // per program, the instances `scale` set
	changed      chan struct{}                   // closed and replaced on every state change
	shuttingDown bool
	firstFail    *int     // exit status of the first program that failed for good
	forced       []string // instances SIGKILLed during the shutdown, in order
	illegal      int      // state transitions refused as illegal
	reloads      uint64   // configs applied after the first
	// reloadFailures counts reloads refused (a bad file): the running
	// config stayed.
	reloadFailures uint64
	exitOnCode     *int // status of the exit_on program whose end ends the supervisor
	systemdReady   bool // READY=1 was sent to systemd

	done     chan struct{} // closed when every program has ended for good and none restarts
	doneOnce sync.Once
	stopReq  chan struct{} // closed by the Shutdown command
	stopOnce sync.Once

	// lockCheck is closed when the lock Healthy waits for was free; nil
	// when no check waits.
	lockCheckMu sync.Mutex
	lockCheck   chan struct{}

	// gate is held (read) by a worker for each reconcile, and (write) by
	// Freeze, which so waits for the workers to be idle (upgrade.go).
	gate sync.RWMutex
	// intake is held by Freeze from before it waits for the gate until it
	// thaws; a worker passes it before each reconcile. So once a freeze
	// waits, no reconcile begins and the gate is free as soon as those
	// under way end: with programs restarting all the time (crash loops
	// with backoffs under a second) the workers were never idle at once,
	// and every upgrade was refused.
	intake sync.Mutex
	// frozen (under mu) refuses reloads and scales while Freeze holds the
	// gate: what they change would not be in the hand-over.
	frozen bool
	// rtCalls (under mu) counts the commands' calls into the runtime
	// under way (frozen.go): Freeze waits for them, since the runtime
	// freezes next and holds its lock through the exec.
	rtCalls int

	listen listenSet  // the programs' listening sockets (listen.go)
	watch  watchers   // file watchers of [program.N.watch]
	stats  statsCache // cgroup figures for status
}

// New builds a Supervisor for opts.Config. Nothing starts before Run.
func New(opts Options) (*Supervisor, error) {
	if opts.Config == nil || opts.Runtime == nil {
		return nil, errors.New("supervisor: Config and Runtime are required")
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Load == nil {
		opts.Load = config.Load
	}
	console := opts.Console
	if console == nil {
		console = os.Stdout
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Supervisor{
		rt:    opts.Runtime,
		load:  opts.Load,
		clock: clk,
		log:   log,
		queue: workqueue.New[string](workqueue.Config[string]{
			Name:        "restart-intents",
			Clock:       clk,
			RateLimiter: backoff.DefaultControllerRateLimiter[string](clk),
		}),
		hooks:     &hooks.Runner{Exec: opts.Runtime, Logger: log, Clock: clk},
		bootedAt:  clk.Now(),
		randFloat: rand.Float64,
		events:    newEventLog(clk, 1000),
		streams:   newStreamSet(),
		ctx:       ctx,
		cancel:    cancel,
		instances: map[string]*instance{},
		byProgram: map[string]map[string]*instance{},
		byProc:    map[string]*instance{},
		rollouts:  map[string]*rolloutRun{},
		scaled:    map[string]int{},
		changed:   make(chan struct{}),
		done:      make(chan struct{}),
		stopReq:   make(chan struct{}),
	}
	s.startupGrace = opts.StartupGrace
	s.onReady = opts.Ready
	s.logs = newLogSet(console, opts.Color, opts.Terminal, opts.Timestamps, log, opts.Config.Programs)
	s.logs.refused = func(key string, err error) {
		s.events.add(key, "", "LogFileRefused", err.Error()+"; its lines go to the console")
	}
	s.logs.oneStream, s.logs.tty = opts.OneStream, opts.OneStream && opts.Tty
	s.listen.log = log
	// A New that fails leaves nothing running: the queue's goroutine and
	// the context go with it.
	fail := func(err error) (*Supervisor, error) {
		cancel()
		s.queue.ShutDown()
		return nil, err
	}
	if opts.Adopt != nil {
		if err := s.adoptScale(opts.Adopt.Scaled); err != nil {
			return fail(fmt.Errorf("adopting the programs: %w", err))
		}
		if err := s.listen.adopt(opts.Adopt.Sockets, opts.AdoptFiles); err != nil {
			return fail(fmt.Errorf("adopting the listen sockets: %w", err))
		}
	}
	if err := s.openSockets(opts.Config); err != nil {
		return fail(err)
	}
	s.apply(opts.Config)
	if opts.Adopt != nil {
		if err := s.adopt(opts.Adopt, opts.AdoptFiles); err != nil {
			return fail(fmt.Errorf("adopting the programs: %w", err))
		}
	}
	return s, nil
}

// instanceKeys names the instances of a program: "web", or "web:0" … "web:N-1".
// InstanceKeys are the names of p's instances: "web", or "web:0" … "web:N-1".
func InstanceKeys(p *config.Program) []string { return instanceKeys(p) }

func instanceKeys(p *config.Program) []string {
	if p.Instances <= 1 {
		return []string{p.Name}
	}
	return numberedKeys(p.Name, p.Instances)
}

// instanceKeysLocked are p's instances as they run: the config's, or as
// many as scale set. A scaled program's instances are numbered even when
// one is left, so scaling never renames the ones that stay.
func (s *Supervisor) instanceKeysLocked(p *config.Program) []string {
	if n, ok := s.scaled[p.Name]; ok {
		return numberedKeys(p.Name, n)
	}
	return instanceKeys(p)
}

// instanceCountLocked is how many instances p runs.
func (s *Supervisor) instanceCountLocked(p *config.Program) int {
	if n, ok := s.scaled[p.Name]; ok {
		return n
	}
	return max(p.Instances, 1)
}

func numberedKeys(name string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = name + ":" + strconv.Itoa(i)
	}
	return keys
}

func (s *Supervisor) newInstance(p *config.Program, key string, index int) *instance {
	in := &instance{
		key:     key,
		spec:    p,
		index:   index,
		state:   Stopped,
		backoff: newCrashBackoff(p, s.clock),
		logs:    s.logs.forKey(p, key),
	}
	if !p.Autostart {
		in.goal = goalStop
	}
	return in
}

func newCrashBackoff(p *config.Program, clk clock.Clock) *backoff.Crash {
	return backoff.NewCrash(backoff.CrashConfig{
		Initial:    p.Backoff.Initial,
		Max:        p.Backoff.Max,
		ResetAfter: p.Backoff.ResetAfter,
		Clock:      clk,
	})
}

// Run starts the workers and every autostart program, and supervises until
// ctx is cancelled (then it shuts down in reverse dependency order) or until
// every program has ended for good. It returns the supervisor's exit status:
// 0, or the status of the first program that failed for good.
func (s *Supervisor) Run(ctx context.Context) int {
	s.mu.Lock()
	workers := s.cfg.Supervisor.Workers // a reload may replace cfg as Run begins
	s.mu.Unlock()
	if workers <= 0 {
		workers = 2
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.Loop{Clock: s.clock}.Until(s.worker, time.Second, stop) })
	}
	wg.Go(func() { s.watchExits(stop) })
	wg.Go(func() { wait.Loop{Clock: s.clock}.Until(s.gcBackoff, 10*time.Minute, stop) })

	s.mu.Lock()
	for _, key := range s.sortedKeysLocked() {
		s.queue.Add(key)
	}
	s.checkDoneLocked()
	s.mu.Unlock()

	s.startWatchers()
	select {
	case <-ctx.Done():
	case <-s.done:
	case <-s.stopReq:
		s.awaitStartupOutput()
	}
	s.stopWatchers()
	s.shutdownAll()
	s.listen.closeAll()
	s.reportForced()
	close(stop)
	s.queue.ShutDown()
	wg.Wait()
	s.deleteSandboxes() // once no worker owns an instance any more
	s.bg.Wait()
	s.streams.close()
	s.logs.close()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exitOnCode != nil {
		return *s.exitOnCode
	}
	if s.firstFail != nil {
		return *s.firstFail
	}
	if len(s.forced) > 0 && s.cfg.Supervisor.StrictShutdown {
		return ExitForcedShutdown
	}
	return 0
}

// ExitForcedShutdown is the exit status, with [supervisor] strict_shutdown,
// of a shutdown that had to SIGKILL a program (the status timeout(1) uses
// when its command timed out).
const ExitForcedShutdown = 124

// forcedLocked records that key was SIGKILLed by the shutdown.
func (s *Supervisor) forcedLocked(key string) {
	if s.shuttingDown && !slices.Contains(s.forced, key) {
		s.forced = append(s.forced, key)
	}
}

// Note records msg as an event of program (or of supervise, for ""): what
// the runtime did before the supervisor existed, such as the start's sweep.
func (s *Supervisor) Note(program, msg string) {
	s.events.add(program, "", "", msg)
}

// reportForced says, once the shutdown is over, who had to be killed.
func (s *Supervisor) reportForced() {
	s.mu.Lock()
	forced := slices.Clone(s.forced)
	s.mu.Unlock()
	if len(forced) == 0 {
		return
	}
	msg := fmt.Sprintf("shutdown forced: SIGKILL for %d program(s) that did not stop in time: %s", len(forced), strings.Join(forced, ", "))
	s.log.Warn(msg, "programs", forced)
	s.events.add("", "", "", msg)
}

// worker processes restart intents until the queue shuts down. It never
// returns on a reconcile error: a failed key goes back rate-limited, and the
// worker takes the next one (returning would leave the key to wait.Until's
// period: see workqueue's TestWorkerReturnsOnError).
func (s *Supervisor) worker() {
	for s.processNext() {
	}
}

func (s *Supervisor) processNext() bool {
	key, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(key)
	s.intake.Lock()
	s.gate.RLock()
	s.intake.Unlock()
	defer s.gate.RUnlock()
	if err := s.reconcile(s.ctx, key); err != nil {
		s.log.Error("reconcile failed; retrying", "program", key, "err", err,
			"retries", s.queue.NumRequeues(key))
		s.queue.AddRateLimited(key)
		return true
	}
	s.queue.Forget(key)
	return true
}

// watchExits turns proc's exit events into restart intents.
func (s *Supervisor) watchExits(stop <-chan struct{}) {
	events := s.rt.Events()
	for {
		select {
		case <-stop:
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			s.mu.Lock()
			if in := s.byProc[ev.ID]; in != nil && ev.ID != "" && (in.procID == ev.ID || in.startingID == ev.ID) {
				in.pendingExit = &exitEvent{procID: ev.ID, exit: exitFromEvent(ev)}
				s.queue.Add(in.key)
			}
			s.mu.Unlock()
		}
	}
}

func exitFromEvent(ev proc.ExitEvent) exitInfo {
	return exitInfo{Code: ev.ExitCode, Signal: ev.Signal, Reason: string(ev.Reason), FinishedAt: ev.FinishedAt}
}

func (s *Supervisor) gcBackoff() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range s.instances {
		in.backoff.GC()
	}
}

// setStateLocked records a transition, emits its event and wakes waiters.
func (s *Supervisor) setStateLocked(in *instance, st State, msg string) {
	if in.state == st && in.message == msg {
		return
	}
	from := in.state
	if !legal(from, st) {
		// A bug of ours: say it loudly, keep the state we know is true.
		s.illegal++
		s.log.Error("illegal state transition refused", "program", in.key, "from", from, "to", st, "msg", msg, "illegal_total", s.illegal)
		return
	}
	in.state, in.message = st, msg
	s.events.add(in.key, string(from), string(st), msg)
	if st != Running {
		in.ready = false
	}
	s.notifyChangedLocked()
	attrs := []any{"program", in.key, "from", from, "to", st}
	if in.pid != 0 {
		attrs = append(attrs, "pid", in.pid)
	}
	if msg != "" {
		attrs = append(attrs, "msg", msg)
	}
	s.log.Info("state", attrs...)
	if st == Running || st == Completed || st == Failed {
		s.wakeDependentsLocked(in.spec.Name)
	}
	s.checkDoneLocked()
}

// notifyChangedLocked wakes everything waiting in waitFor.
func (s *Supervisor) notifyChangedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// wakeDependentsLocked queues every instance that waits for program name.
func (s *Supervisor) wakeDependentsLocked(name string) {
	for _, dep := range s.dependents[name] {
		for _, other := range s.instancesOfLocked(dep) {
			if other.state == Waiting {
				s.queue.Add(other.key)
			}
		}
	}
}

// unmetDepLocked says what in still waits for, "" when nothing: each
// dependency in the condition depends_on names — running, ready (running
// when it has no readiness check) or completed — for every instance of it
// meant to run (see stoppedAsideLocked).
func (s *Supervisor) unmetDepLocked(in *instance) string {
	for _, d := range in.spec.DependsOn {
		cond := in.spec.DependsOnCondition(d)
		found := false
		for _, other := range s.instancesOfLocked(d) {
			if s.stoppedAsideLocked(other) {
				continue
			}
			found = true
			switch cond {
			case config.DependCompleted:
				if other.state == Failed {
					return d + " to complete (it failed)"
				}
				if other.state != Completed {
					return d + " to complete"
				}
			case config.DependRunning:
				if other.state != Running {
					return d
				}
			default:
				if other.spec.Sidecar {
					// A sidecar serves once started, as the kubelet's:
					// its readiness is for its own clients.
					if !startedLocked(other) {
						return d + " to start"
					}
					continue
				}
				if !other.ready {
					if other.state == Running {
						return d + " to be ready"
					}
					return d
				}
			}
		}
		if !found {
			return d
		}
	}
	return ""
}

// checkDoneLocked closes s.done when every instance but the sidecars has
// ended for good: all settled (Completed or Failed), none of them wanting
// to run. The shutdown that follows stops the sidecars.
// A supervisor of long-running programs never gets here.
func (s *Supervisor) checkDoneLocked() {
	mains := 0
	for _, in := range s.instances {
		if in.spec.Sidecar {
			continue // sidecars serve the others; shutdownAll stops them
		}
		mains++
		if in.goal == goalRun && (!endedLocked(in) || in.job != nil) {
			return // a job meant to run has another time coming
		}
		if in.procID != "" || in.state == Stopping || in.state == Starting {
			return
		}
		if in.goal != goalRun {
			// Stopped by a command (or never started, autostart = false):
			// the user may start it again. Only programs that ended on
			// their own end supervise; stopping the last running one
			// must not take a container down (found by the soak).
			return
		}
	}
	if mains == 0 {
		return
	}
	s.doneOnce.Do(func() { close(s.done) })
}

// startedLocked reports whether in's process runs and its startup probe
// (if any) passed: when the kubelet starts the next container after a
// sidecar.
func startedLocked(in *instance) bool {
	if in.procID == "" || in.state != Running {
		return false
	}
	if in.spec.Probes.Startup == nil {
		return true
	}
	h := in.health
	return h != nil && h.probes != nil && h.probes.Status().Started
}

func (s *Supervisor) sortedKeysLocked() []string {
	keys := make([]string, 0, len(s.instances))
	for k := range s.instances {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := s.instances[keys[i]], s.instances[keys[j]]
		if la, lb := s.level[a.spec.Name], s.level[b.spec.Name]; la != lb {
			return la < lb
		}
		return keys[i] < keys[j]
	})
	return keys
}

// waitFor blocks until cond holds (checked under s.mu) or ctx ends.
func (s *Supervisor) waitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok := cond()
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// deleteSandboxes deletes what sandboxes are left once every process is
// gone and the workers have ended: sandboxes outlive their processes only
// until here.
func (s *Supervisor) deleteSandboxes() {
	s.mu.Lock()
	var sandboxes []string
	for _, in := range s.instances {
		if in.sandboxID != "" {
			sandboxes = append(sandboxes, in.sandboxID)
			in.sandboxID = ""
		}
	}
	s.mu.Unlock()
	for _, id := range sandboxes {
		if err := s.rt.DeleteSandbox(context.Background(), id); err != nil {
			s.log.Warn("deleting sandbox", "sandbox", id, "err", err)
		}
	}
}

// ResizeTerminals follows a resize of the console's terminal (the dev
// runner's SIGWINCH): each program's pseudo-terminal (Options.Tty) gets
// the new size, less the columns of the line prefix, and each program
// whose size changed a SIGWINCH to its process group, as a terminal
// sends its foreground group. It does nothing when the console is no
// terminal.
func (s *Supervisor) ResizeTerminals() {
	ws, ok := s.logs.console.PtySize()
	if !ok {
		return
	}
	tell := s.logs.resize(ws)
	if len(tell) == 0 {
		return
	}
	s.mu.Lock()
	ids := make([]string, 0, len(tell))
	for _, k := range tell {
		if in := s.instances[k]; in != nil && in.procID != "" {
			ids = append(ids, in.procID)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		if err := s.rt.Signal(id, syscall.SIGWINCH); err != nil {
			s.log.Debug("telling a program its terminal was resized", "err", err)
		}
	}
}

// Kill aborts a graceful shutdown: every running process gets SIGKILL and
// every blocking call into proc is cancelled. A second SIGINT and the end of
// shutdown_timeout come here.
func (s *Supervisor) Kill() {
	s.mu.Lock()
	var ids []string
	for _, in := range s.instances {
		if in.procID != "" {
			ids = append(ids, in.procID)
			s.forcedLocked(in.key)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		_ = s.rt.Signal(id, syscall.SIGKILL)
	}
	s.cancel()
}
