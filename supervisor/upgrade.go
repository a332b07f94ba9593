package supervisor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/internal/sockets"
	"github.com/supervise-dev/supervise/logs"
	"github.com/supervise-dev/supervise/probe"
)

// The supervisor's part of an upgrade in place (an execve of a new
// supervise binary in the same process): Freeze pauses the workers and
// detaches everything that must survive, the caller execs, and the new
// binary's New adopts the Handover (Options.Adopt) instead of starting
// what runs.

// Handover is the supervisor's state across an upgrade. The descriptors
// it names are inherited: the caller clears their close-on-exec flag.
type Handover struct {
	// Config is the config the programs run under: the new binary takes
	// them over under it, and reads the file only then, as a reload.
	Config    *config.Config     `json:"config,omitempty"`
	Instances []InstanceHandover `json:"instances"`
	Sockets   []SocketHandover   `json:"sockets"`
	Scaled    map[string]int     `json:"scaled,omitempty"`
	Events    []ctl.Event        `json:"events,omitempty"`
	// Rollouts are the rolling restarts under way (a restart's, a file
	// change's) or ended by the upgrade with a waiting restart: the new
	// binary finishes them, or a resumed restart takes its over.
	Rollouts []RolloutHandover `json:"rollouts,omitempty"`
}

// RolloutHandover is what one rollout still has to do: the instances it
// has not come to, in order, and the batch in flight (each instance with
// the process it had), whose successors are waited for before the next
// batch goes. Timeout is the wait for each successor.
type RolloutHandover struct {
	Program  string            `json:"program"`
	Pending  []string          `json:"pending,omitempty"`
	InFlight map[string]string `json:"in_flight,omitempty"`
	Timeout  time.Duration     `json:"timeout"`
}

// InstanceHandover is one instance: what status shows, its process, its
// pipes and its recent lines.
type InstanceHandover struct {
	Key     string `json:"key"`
	State   State  `json:"state"`
	Message string `json:"message,omitempty"`
	Goal    int    `json:"goal"`
	// The asks not yet taken by a reconcile (see askStartLocked).
	RestartRequested bool           `json:"restart_requested,omitempty"`
	StartAsked       bool           `json:"start_asked,omitempty"`
	WaiveBackoff     bool           `json:"waive_backoff,omitempty"`
	StoppedFor       string         `json:"stopped_for,omitempty"`
	ProcID           string         `json:"proc_id,omitempty"`
	Pid              int            `json:"pid,omitempty"`
	StartedAt        time.Time      `json:"started_at"`
	SandboxID        string         `json:"sandbox_id,omitempty"`
	Ready            bool           `json:"ready,omitempty"`
	Restarts         int            `json:"restarts"`
	OOMKills         int            `json:"oom_kills,omitempty"`
	Settled          bool           `json:"settled,omitempty"`
	AfterExit        bool           `json:"after_exit,omitempty"`
	LastExit         *exitInfo      `json:"last_exit,omitempty"`
	Backoff          *backoff.Step  `json:"backoff,omitempty"`
	Pipes            []PipeHandover `json:"pipes,omitempty"`
	Lines            []logs.Line    `json:"lines,omitempty"`
	// Notify is the readiness notification channel of the running
	// process (notify), when it has one.
	Notify *NotifyHandover `json:"notify,omitempty"`

	// ProcSpec is the spec the process was started with, when the
	// config's asks for another process (a reload's rollout had not
	// replaced it yet); nil when it is the config's.
	ProcSpec *config.Program `json:"proc_spec,omitempty"`
	// Job is a scheduled program's schedule state; nil for a daemon.
	Job *JobHandover `json:"job,omitempty"`
	// Probes is where the run's probes stand: their counts toward the
	// thresholds, verdicts, last results and next times.
	Probes *probe.State `json:"probes,omitempty"`
}

// PipeHandover is the read end of one output pipe and the start of a line
// read from it before the exec. Tty says it is the master of a
// pseudo-terminal (the dev runner's --tty): read as a pipe, it is checked
// as what it is, and its terminal settings and window size live on in the
// kernel with it.
type PipeHandover struct {
	Stream  string `json:"stream"`
	FD      int    `json:"fd"`
	Tty     bool   `json:"tty,omitempty"`
	Pending []byte `json:"pending,omitempty"`
}

// SocketHandover is one held listening socket.
type SocketHandover struct {
	Key  string       `json:"key"`
	Spec sockets.Spec `json:"spec"`
	FD   int          `json:"fd"`
}

// Frozen is a supervisor paused for an upgrade: its workers idle, its log
// pumps stopped at a read boundary. Files are the descriptors the state
// names; Thaw undoes it all when the exec does not happen.
type Frozen struct {
	State Handover
	Files []*os.File
	Thaw  func()
}

// Freeze pauses the supervisor for an upgrade. It waits (until ctx ends)
// for the workers to finish what they do, starting nothing new meanwhile.
// An instance then found between two states (a start waiting to be ready,
// a stop waiting for its process's exit, a program a reload removed whose
// stop has not begun: states only the workers can end) undoes the freeze:
// the workers go on until that instance is settled, and it tries again.
// When ctx ends first, it refuses, naming the instance.
func (s *Supervisor) Freeze(ctx context.Context) (*Frozen, error) {
	for {
		f, err := s.freeze(ctx)
		var busy *busyError
		if !errors.As(err, &busy) || ctx.Err() != nil {
			return f, err
		}
		settled := func() bool {
			in := s.instances[busy.key]
			return in == nil || busyOf(busy.key, in) == nil
		}
		if err := s.waitFor(ctx, settled); err != nil {
			return nil, fmt.Errorf("%w (waited for it: %v)", busy, err)
		}
	}
}

// busyError refuses a freeze for an instance between two states.
type busyError struct{ key, what string }

func (e *busyError) Error() string { return "program " + e.key + " is " + e.what }

// busyOf says why in cannot be handed over as it is, or nil: a start or a
// stop under way, or a program a reload removed whose process still runs
// (the new binary, given the config without it, could not take that
// process back).
func busyOf(key string, in *instance) *busyError {
	switch {
	case in.state == Starting || in.state == Stopping || in.startingID != "":
		return &busyError{key, string(in.state)}
	case in.goal == goalRemove && in.procID != "":
		return &busyError{key, "being removed"}
	}
	return nil
}

// freeze is one attempt of Freeze: it refuses with a *busyError an
// instance it finds between two states.
func (s *Supervisor) freeze(ctx context.Context) (*Frozen, error) {
	// Held only for a moment by a worker on its way to a reconcile.
	s.intake.Lock()
	for !s.gate.TryLock() {
		select {
		case <-ctx.Done():
			s.intake.Unlock()
			return nil, fmt.Errorf("the workers are busy (a start or stop under way): %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	thawed := false
	var resume []func()
	thaw := func() {
		if thawed {
			return
		}
		thawed = true
		for _, f := range resume {
			f()
		}
		s.mu.Lock()
		s.frozen = false
		s.notifyChangedLocked() // the commands waiting to call the runtime
		// No exec: the clients of the waiting restarts resume here.
		maps.DeleteFunc(s.rollouts, func(_ string, r *rolloutRun) bool { return r.orphan })
		s.mu.Unlock()
		s.gate.Unlock()
		s.intake.Unlock()
		// A resize while the terminals were detached reached none.
		s.ResizeTerminals()
	}
	fail := func(err error) (*Frozen, error) {
		thaw()
		return nil, err
	}
	s.mu.Lock()
	if s.shuttingDown {
		s.mu.Unlock()
		return fail(errors.New("supervise is shutting down"))
	}
	s.frozen = true
	s.mu.Unlock()
	// The commands' runtime calls under way end first: each is a file
	// read or a kill, and none starts now (frozen.go).
	if err := s.waitFor(ctx, func() bool { return s.rtCalls == 0 }); err != nil {
		return fail(fmt.Errorf("commands calling the runtime: %w", err))
	}
	s.mu.Lock()
	var st Handover
	st.Config, st.Scaled = s.cfg, s.scaled
	for _, key := range s.sortedKeysLocked() {
		in := s.instances[key]
		if busy := busyOf(key, in); busy != nil {
			s.mu.Unlock()
			return fail(busy)
		}
		ih := InstanceHandover{
			Key: key, State: in.state, Message: in.message, Goal: int(in.goal),
			ProcID: in.procID, Pid: in.pid, StartedAt: in.startedAt, SandboxID: in.sandboxID,
			Ready: in.ready, Restarts: in.restarts, OOMKills: in.oomKills, Settled: in.settled,
			AfterExit: in.afterExit, LastExit: in.lastExit,
			RestartRequested: in.restartRequested, StartAsked: in.startAsked,
			WaiveBackoff: in.waiveBackoff, StoppedFor: in.stoppedFor,
		}
		if step, ok := in.backoff.Entry(key); ok {
			ih.Backoff = &step
		}
		if in.health != nil && in.health.probes != nil {
			ps := in.health.probes.State()
			ih.Probes = &ps
		}
		ih.Job = jobHandoverLocked(in)
		if in.procID != "" && in.procSpec != nil && in.procSpec.NeedsNewProcess(in.spec) {
			ih.ProcSpec = in.procSpec
		}
		st.Instances = append(st.Instances, ih)
	}
	// Under the same lock as the instances: each instance is either still
	// to be asked by its rollout or asked (its ask in the instance).
	for _, prog := range slices.Sorted(maps.Keys(s.rollouts)) {
		run := s.rollouts[prog]
		if run.carry && len(run.pending)+len(run.inflight) > 0 {
			st.Rollouts = append(st.Rollouts, RolloutHandover{Program: prog, Pending: slices.Clone(run.pending),
				InFlight: maps.Clone(run.inflight), Timeout: min(run.timeout, maxRolloutTimeout)})
		}
	}
	progs := map[string]*instLogs{}
	// The runs with a notification channel, and their health (which
	// stays while frozen: exits wait for the workers).
	type notifyRun struct {
		in *instance
		h  *health
	}
	notifying := map[string]notifyRun{}
	for _, in := range s.instances {
		progs[in.key] = in.logs
		if h := in.health; h != nil && in.procID != "" && (h.sock != nil || h.fd != nil) {
			notifying[in.key] = notifyRun{in, h}
		}
	}
	st.Events = s.events.history()
	s.mu.Unlock()

	// The pumps: stopped between two reads, each pipe kept with what it
	// had read of an unfinished line.
	var files []*os.File
	for i := range st.Instances {
		ih := &st.Instances[i]
		il := progs[ih.Key]
		// A router that new log settings just replaced may still be
		// handing its pipes to this one: they must be in first.
		select {
		case <-il.adopted:
		case <-ctx.Done():
			return fail(fmt.Errorf("program %s: its pipes are moving to new log settings: %w", ih.Key, ctx.Err()))
		}
		ds, err := il.prog.Detach(ctx)
		resume = append(resume, func() { il.prog.Resume(ds) })
		if err != nil {
			return fail(err)
		}
		for _, d := range ds {
			fd, err := rawFD(d.File)
			if err != nil {
				return fail(err)
			}
			ih.Pipes = append(ih.Pipes, PipeHandover{Stream: d.Stream, FD: fd, Tty: il.tty, Pending: d.Pending})
			files = append(files, d.File)
		}
		ih.Lines = il.ring.Last(-1)
		if r, ok := notifying[ih.Key]; ok {
			nh, fs, undo, err := s.freezeNotify(ctx, r.in, r.h)
			resume = append(resume, undo)
			if err != nil {
				return fail(err)
			}
			ih.Notify = nh
			files = append(files, fs...)
		}
	}
	s.listen.mu.Lock()
	for key, sk := range s.listen.held {
		f := sk.File()
		fd, err := rawFD(f)
		if err != nil {
			s.listen.mu.Unlock()
			return fail(err)
		}
		st.Sockets = append(st.Sockets, SocketHandover{Key: key, Spec: sk.Spec(), FD: fd})
		files = append(files, f)
	}
	s.listen.mu.Unlock()
	return &Frozen{State: st, Files: files, Thaw: thaw}, nil
}

// errUpgrading refuses what would change the state being handed over:
// the client sends it again to the new binary.
var errUpgrading = ctl.ErrUpgrading

// rawFD is f's descriptor, without os.File.Fd's switch to blocking mode:
// the new binary's poller needs the pipe non-blocking.
func rawFD(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	fd := -1
	if err := rc.Control(func(u uintptr) { fd = int(u) }); err != nil {
		return 0, err
	}
	return fd, nil
}

// Limits on what a hand-over may hold: it is input to another binary.
const (
	maxHandoverInstances = 100000
	maxHandoverLines     = 100000
	maxPending           = 1 << 20
)

// adopt takes over h after the config has been applied: the instances
// get their state, process and pipes back; Run then reconciles them as
// usual (a running process is left alone). fds are the inherited
// descriptors by number, checked by the caller to be open and of the
// right kind; adopt takes ownership of those it uses.
func (s *Supervisor) adopt(h *Handover, fds map[int]*os.File) error {
	if len(h.Instances) > maxHandoverInstances {
		return fmt.Errorf("%d instances, at most %d", len(h.Instances), maxHandoverInstances)
	}
	take := func(fd int) (*os.File, error) {
		f := fds[fd]
		if f == nil {
			return nil, fmt.Errorf("descriptor %d was not passed", fd)
		}
		delete(fds, fd)
		return f, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The runs beside a job's instance first, then every check: a
	// hand-over refused here leaves nothing begun (New fails whole), and
	// the old binary takes its programs back.
	if err := s.adoptBesideLocked(h); err != nil {
		return err
	}
	for i := range h.Instances {
		if err := s.checkHandoverLocked(&h.Instances[i], fds); err != nil {
			return err
		}
	}
	if err := s.checkRolloutsLocked(h.Rollouts); err != nil {
		return err
	}
	socks, err := s.adoptNotifySocketsLocked(h, fds)
	if err != nil {
		return err
	}
	for _, ih := range h.Instances {
		in := s.instances[ih.Key]
		if in == nil {
			continue
		}
		in.state, in.message, in.goal = ih.State, ih.Message, goal(ih.Goal)
		in.restartRequested, in.startAsked, in.waiveBackoff, in.stoppedFor = ih.RestartRequested, ih.StartAsked, ih.WaiveBackoff, ih.StoppedFor
		in.procID, in.pid, in.startedAt, in.sandboxID = ih.ProcID, ih.Pid, ih.StartedAt, ih.SandboxID
		in.procSpec = nil
		if in.procID != "" {
			in.procSpec = in.spec
			if ih.ProcSpec != nil {
				in.procSpec = ih.ProcSpec
			}
		}
		s.trackProcLocked(in.procID, in) // its exit finds it through the index
		in.restarts, in.oomKills, in.settled, in.afterExit, in.lastExit = ih.Restarts, ih.OOMKills, ih.Settled, ih.AfterExit, ih.LastExit
		if ih.Backoff != nil {
			in.backoff.Restore(in.key, *ih.Backoff)
		}
		if ih.SandboxID != "" {
			// As its process made it: a new one reuses it only when it asks
			// for the same.
			made := in.spec
			if in.procSpec != nil {
				made = in.procSpec
			}
			in.run.sandboxCfg = sandboxConfig(made, in.key)
		}
		s.adoptJobLocked(in, ih.Job)
		if !besideLocked(in) { // a run beside writes to its job's ring, which has its lines
			for _, l := range ih.Lines {
				_ = in.logs.ring.WriteLine(l)
			}
		}
		for _, p := range ih.Pipes {
			f, _ := take(p.FD)
			in.logs.prog.Adopt(p.Stream, f, p.Pending)
		}
		if in.procID != "" && in.state == Running {
			hl := &health{since: s.clock.Now(), adoptedReady: ih.Ready, resume: ih.Probes}
			if n := ih.Notify; n != nil {
				var pipe *os.File
				if n.PipeFD != 0 {
					pipe, _ = take(n.PipeFD)
				}
				adoptNotify(hl, n, socks[ih.Key], pipe)
			}
			in.health = hl
			s.startHealth(in, hl, in.sandboxID, programEnv(in.spec, in, in.lastExit))
			in.ready = readyLocked(in)
		}
	}
	s.renewOutdatedLocked(h)
	s.resumeRolloutsLocked(h.Rollouts)
	// An instance stopped for a dependency comes back with it, as before
	// the upgrade: the index of dependents learns the adopted stoppedFor.
	s.indexDependentsLocked(s.cfg)
	for _, ev := range h.Events {
		s.events.push(ev)
	}
	return nil
}

// renewOutdatedLocked goes on with the rollouts the exec cut short: the
// running instances whose processes were started from a spec the config
// has changed since get new ones, as the reload that changed it was
// giving them.
func (s *Supervisor) renewOutdatedLocked(h *Handover) {
	carried := map[string]*RolloutHandover{}
	for i := range h.Rollouts {
		carried[h.Rollouts[i].Program] = &h.Rollouts[i]
	}
	outdated := map[string][]string{}
	var names []string
	for _, ih := range h.Instances {
		in := s.instances[ih.Key]
		if in == nil || ih.ProcSpec == nil || besideLocked(in) || in.goal != goalRun {
			continue
		}
		if outdated[in.spec.Name] == nil {
			names = append(names, in.spec.Name)
		}
		outdated[in.spec.Name] = append(outdated[in.spec.Name], ih.Key)
	}
	for _, name := range names {
		if r := carried[name]; r != nil {
			// One rollout per program: the carried one replaces these too.
			for _, k := range outdated[name] {
				if _, asked := r.InFlight[k]; !asked && !slices.Contains(r.Pending, k) {
					r.Pending = append(r.Pending, k)
				}
			}
			continue
		}
		s.log.Info("upgraded in the middle of a rollout: replacing the processes it had not replaced yet", "program", name, "instances", outdated[name])
		s.renewLocked(name, outdated[name])
	}
}

// adoptScale takes the scales of the hand-over, before the config is
// applied: the instances a scale made are made with the config's, and
// have their processes to take back.
func (s *Supervisor) adoptScale(scaled map[string]int) error {
	for n, c := range scaled {
		if c < 0 || c > 10000 {
			return fmt.Errorf("scale of %s: %d", n, c)
		}
	}
	if scaled != nil {
		s.scaled = scaled
	}
	return nil
}

// checkHandoverLocked checks one instance of a hand-over against the
// config just applied.
func (s *Supervisor) checkHandoverLocked(ih *InstanceHandover, fds map[int]*os.File) error {
	in := s.instances[ih.Key]
	if in == nil {
		if ih.ProcID != "" {
			return fmt.Errorf("instance %s runs but is not in the config it was handed over with", ih.Key)
		}
		return nil
	}
	if _, ok := transitions[ih.State]; !ok || ih.State == Starting || ih.State == Stopping {
		return fmt.Errorf("instance %s: state %q", ih.Key, ih.State)
	}
	if ih.Goal < int(goalRun) || ih.Goal > int(goalRemove) || ih.Restarts < 0 || len(ih.Lines) > maxHandoverLines {
		return fmt.Errorf("instance %s: bad goal, restarts or lines", ih.Key)
	}
	if (ih.ProcID == "") != (ih.Pid == 0) || ih.ProcID != "" && ih.SandboxID == "" {
		return fmt.Errorf("instance %s: a process without a pid or sandbox", ih.Key)
	}
	if ih.StoppedFor != "" && s.cfg.Program(ih.StoppedFor) == nil {
		ih.StoppedFor = "" // a dependency gone from the config binds nothing
	}
	if err := checkJobHandover(ih); err != nil {
		return err
	}
	if p := ih.ProcSpec; p != nil && (ih.ProcID == "" || p.Name != in.spec.Name || len(p.Command) == 0) {
		return fmt.Errorf("instance %s: the spec of its process is not one of %s", ih.Key, in.spec.Name)
	}
	if ih.Probes != nil {
		if err := ih.Probes.Check(); err != nil {
			return fmt.Errorf("instance %s: %w", ih.Key, err)
		}
	}
	if len(ih.Pipes) > 2 {
		return fmt.Errorf("instance %s: %d pipes", ih.Key, len(ih.Pipes))
	}
	for _, p := range ih.Pipes {
		if p.Stream != logs.Stdout && p.Stream != logs.Stderr || len(p.Pending) > maxPending {
			return fmt.Errorf("instance %s: pipe of stream %q", ih.Key, p.Stream)
		}
		if fds[p.FD] == nil {
			return fmt.Errorf("instance %s: descriptor %d was not passed", ih.Key, p.FD)
		}
	}
	return checkNotifyHandover(ih, in.spec, fds)
}

// adoptSockets puts the inherited listening sockets in the set before the
// config's are bound, so that the held ones are not bound a second time.
func (l *listenSet) adopt(socks []SocketHandover, fds map[int]*os.File) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[string]*sockets.Socket{}
	}
	for _, sh := range socks {
		f := fds[sh.FD]
		if f == nil {
			return fmt.Errorf("listen socket %s: descriptor %d was not passed", sh.Key, sh.FD)
		}
		if sh.Spec.Key() != sh.Key {
			return fmt.Errorf("listen socket %s: its spec says %s", sh.Key, sh.Spec.Key())
		}
		sk, err := sockets.Adopt(sh.Spec, f)
		if err != nil {
			return err
		}
		delete(fds, sh.FD)
		l.held[sh.Key] = sk
	}
	return nil
}

// maxRolloutTimeout bounds a carried rollout's wait for each successor.
const maxRolloutTimeout = 7 * 24 * time.Hour

// checkRolloutsLocked checks the carried rollouts against the config
// just applied: each of a program of it, once, its instances of that
// program, each once, and a sane timeout.
func (s *Supervisor) checkRolloutsLocked(rs []RolloutHandover) error {
	if len(rs) > len(s.cfg.Programs) {
		return fmt.Errorf("%d rollouts for %d programs", len(rs), len(s.cfg.Programs))
	}
	progs := map[string]bool{}
	for _, r := range rs {
		if s.cfg.Program(r.Program) == nil || progs[r.Program] {
			return fmt.Errorf("rollout of %q: not a program of the config, or twice", r.Program)
		}
		progs[r.Program] = true
		if r.Timeout <= 0 || r.Timeout > maxRolloutTimeout {
			return fmt.Errorf("rollout of %s: timeout %v", r.Program, r.Timeout)
		}
		seen := map[string]bool{}
		check := func(k string) error {
			in := s.instances[k]
			if in == nil || in.spec.Name != r.Program || seen[k] {
				return fmt.Errorf("rollout of %s: %q is not an instance of it, or is there twice", r.Program, k)
			}
			seen[k] = true
			return nil
		}
		if len(r.Pending)+len(r.InFlight) > maxHandoverInstances {
			return fmt.Errorf("rollout of %s: %d instances", r.Program, len(r.Pending)+len(r.InFlight))
		}
		for _, k := range r.Pending {
			if err := check(k); err != nil {
				return err
			}
		}
		for k := range r.InFlight {
			if err := check(k); err != nil {
				return err
			}
		}
	}
	return nil
}

// resumeRolloutsLocked goes on with the carried rollouts, by the batch
// rules of the config: the batch in flight first, then the rest.
func (s *Supervisor) resumeRolloutsLocked(rs []RolloutHandover) {
	for _, r := range rs {
		keys := slices.Concat(r.Pending, slices.Collect(maps.Keys(r.InFlight)))
		plan := s.planLocked(r.Program, keys, r.Timeout)
		plan.keys, plan.inflight, plan.carry, plan.adopted = r.Pending, r.InFlight, true, true
		s.log.Info("upgraded in the middle of a rolling restart: going on with it", "program", r.Program,
			"in_flight", len(r.InFlight), "pending", len(r.Pending))
		s.startRollout(plan)
	}
}
