package proc

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/supervise-dev/supervise/internal/execpath"
	"github.com/supervise-dev/supervise/internal/unixsig"
	"golang.org/x/sys/unix"
)

// Create records a process in a sandbox, in state Created. User, group,
// groups and rlimits are resolved now, so a bad identity fails here.
func (r *Runtime) Create(ctx context.Context, sandboxID string, cfg ProcessConfig) (string, error) {
	if len(cfg.Args) == 0 {
		return "", errors.New("creating process: no command")
	}
	spec, err := resolveSpec(cfg.Args, cfg.Env, cfg.Dir, cfg.User, cfg.Group, cfg.Groups, cfg.Rlimits, cfg.NoNewPrivileges, cfg.Umask)
	if err != nil {
		return "", fmt.Errorf("creating process %q: %w", cfg.Args[0], err)
	}
	spec.InitPath = r.initPath
	spec.ListenPID = cfg.ListenPID
	for fd, f := range cfg.ExtraFiles {
		if f == nil || fd < 3 || fd > 1024 {
			return "", fmt.Errorf("creating process %q: extra file at descriptor %d: want an open file at 3 to 1024", cfg.Args[0], fd)
		}
		spec.ExtraFDs = append(spec.ExtraFDs, fd)
	}
	slices.Sort(spec.ExtraFDs)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", ErrClosed
	}
	sb, ok := r.sandboxes[sandboxID]
	if !ok {
		return "", fmt.Errorf("creating process: sandbox %q: %w", sandboxID, ErrNotFound)
	}
	if sb.deleting {
		return "", fmt.Errorf("creating process: sandbox %q: %w", sandboxID, ErrSandboxGone)
	}
	p := &process{
		id:         r.newID(sandboxID + ".p"),
		sb:         sb,
		cfg:        cfg,
		spec:       spec,
		stopSignal: cfg.StopSignal,
		exitCh:     make(chan exitStatus, 1),
		exited:     make(chan struct{}),
		state:      StateCreated,
	}
	if p.stopSignal == 0 {
		p.stopSignal = unix.SIGTERM
	}
	r.procs[p.id] = p
	sb.procs[p.id] = p
	return p.id, nil
}

func resolveSpec(args, env []string, dir, user, group string, groups []string, rls []Rlimit, nnp bool, umask int) (*spawnSpec, error) {
	id, err := resolveIdentity(systemAccounts{}, user, group, groups)
	if err != nil {
		return nil, err
	}
	rl, err := resolveRlimits(rls)
	if err != nil {
		return nil, err
	}
	if umask > 0o777 {
		return nil, fmt.Errorf("umask %#o out of range", umask)
	}
	return &spawnSpec{
		Args: slices.Clone(args), Env: slices.Clone(env), Dir: dir,
		Cred: id.set, UID: id.uid, GID: id.gid, Groups: id.groups,
		Rlimits: rl, NoNewPrivs: nnp, Umask: umask,
	}, nil
}

func (r *Runtime) lookup(id string) (*process, error) {
	p, ok := r.procs[id]
	if !ok {
		return nil, fmt.Errorf("process %q: %w", id, ErrNotFound)
	}
	return p, nil
}

// Start starts a Created process; it returns once the program has been
// exec'd (a failed exec is its error) and the process is Running.
func (r *Runtime) Start(ctx context.Context, id string) error {
	r.mu.Lock()
	p, err := r.lookup(id)
	if err == nil && (p.state != StateCreated || p.starting) {
		err = fmt.Errorf("starting %q: it is %s: %w", id, p.stateLocked(), ErrInvalidState)
	}
	if err == nil {
		if err = p.sb.enterLocked(); err != nil {
			err = fmt.Errorf("starting %q: %w", id, err)
		}
	}
	if err != nil {
		r.mu.Unlock()
		return err
	}
	p.starting = true
	r.mu.Unlock()
	defer r.leave(p.sb)

	startedAt := time.Now() // before the fork: the exit may be reported at once
	pid, oom, err := r.start(ctx, p)
	r.mu.Lock()
	defer r.mu.Unlock()
	p.starting = false
	if err != nil {
		return fmt.Errorf("starting: %w", err)
	}
	p.state, p.pid, p.oomBefore, p.startedAt = StateRunning, pid, oom, startedAt
	r.wg.Add(1)
	go r.watch(p)
	if p.sb.deleting && p.sb.init == nil {
		// Forked after DeleteSandbox's first kill: it must not run on.
		_ = r.rp.kill(pid, true, unix.SIGKILL)
	}
	return nil
}

func (p *process) stateLocked() State {
	if p.starting {
		return "Starting"
	}
	return p.state
}

func (r *Runtime) start(ctx context.Context, p *process) (pid int, oom uint64, err error) {
	spec := *p.spec
	if err := checkWorkDir(spec.Dir); err != nil {
		return 0, 0, err
	}
	if spec.Path, err = execpath.Look(spec.Args[0], spec.Env, spec.Dir); err != nil {
		return 0, 0, err
	}
	if p.sb.cg != nil && !p.sb.fresh.Swap(false) {
		oom, _ = p.sb.cg.oomKills()
	}
	if in := p.sb.init; in != nil {
		p.child = r.seq.Add(1)
		pid, err = in.start(p.child, &spec, p.cfg.Stdout, p.cfg.Stderr, p.extraFds(), p.exitCh)
		return pid, oom, err
	}
	out, errf, closeStdio, err := stdioFds(p.cfg.Stdout, p.cfg.Stderr)
	if err != nil {
		return 0, 0, err
	}
	defer closeStdio()
	pid, err = r.spawnDirect(p.sb, &spec, out, errf, p.extraFds(), p.exitCh)
	return pid, oom, err
}

// extraFds lists the descriptors of cfg.ExtraFiles in spec.ExtraFDs order.
func (p *process) extraFds() []int {
	fds := make([]int, len(p.spec.ExtraFDs))
	for i, n := range p.spec.ExtraFDs {
		fds[i] = int(p.cfg.ExtraFiles[n].Fd())
	}
	return fds
}

// spawnDirect forks spec as the runtime's child into sb's cgroup: through
// the spawner when the runtime holds many descriptors, else itself.
func (r *Runtime) spawnDirect(sb *sandbox, spec *spawnSpec, stdout, stderr int, extra []int, exitCh chan exitStatus) (int, error) {
	sp := r.sp
	if !sp.use(append([]int{stdout, stderr}, extra...)...) {
		sp = nil
	} else if err := sp.ready(); err != nil {
		r.log.Warn("cannot start the spawner; forking directly", "err", err)
		sp = nil
	}
	return r.spawnVia(sb, spec, stdout, stderr, extra, exitCh, sp)
}

// spawnVia forks spec through sp, or from the runtime itself when sp is
// nil. A child of the spawner is ours all the same (CLONE_PARENT), placed
// the same way; under ptrace its tracer is the spawner's parent thread.
func (r *Runtime) spawnVia(sb *sandbox, spec *spawnSpec, stdout, stderr int, extra []int, exitCh chan exitStatus, sp *spawnerClient) (int, error) {
	pl := placement(sb.place.Load())
	if pl == placeFD && sp != nil {
		// clone3 refuses CLONE_PARENT with an exit signal, which Go's
		// clone3 always sets: a spawned child is placed as on v1.
		pl = placePtrace
	}
	sys := &syscall.SysProcAttr{}
	if pl == placeFD {
		fd, err := sb.cg.openFD()
		if err != nil {
			pl = placePtrace
			sb.place.Store(int32(pl))
		} else {
			defer unix.Close(fd)
			sys.UseCgroupFD, sys.CgroupFD = true, fd
		}
	}
	if pl == placePtrace {
		sys.Ptrace = true
		if sp == nil {
			// The tracer is the forking thread: detach must come from it.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
		}
	}
	if pl == placeStub {
		withStub := *spec
		withStub.ForceShim = true
		spec = &withStub
	}
	stopped := make(chan struct{}, 1)
	var finish startedFunc
	forkExec := forkExecFunc(syscall.ForkExec)
	if sp != nil {
		forkExec = sp.forkExec
	}
	spawn := r.rp.spawn
	if pl == placePtrace {
		spawn = r.rp.spawnTraced
	}
	pid, err := spawn(func() (int, error) {
		pid, fin, err := forkSpec(spec, stdout, stderr, extra, sys, forkExec)
		finish = fin
		return pid, err
	}, func(ws unix.WaitStatus) {
		if ws.Stopped() {
			select {
			case stopped <- struct{}{}:
			default:
			}
			return
		}
		exitCh <- exitStatus{ws: ws, at: time.Now()}
	})
	if sp != nil && (errors.Is(err, errSpawnerDown) || errors.Is(err, errSpawnerLost) && (pl != placeNone || spec.needsShim())) {
		// Nothing was forked, or what was cannot run the program (it
		// stopped under ptrace, or the stub waits for its spec): the
		// direct path loses no start and starts no second one.
		r.log.Warn("the spawner could not fork; forking directly", "program", spec.Args[0], "err", err)
		return r.spawnVia(sb, spec, stdout, stderr, extra, exitCh, nil)
	}
	if pl == placeFD && (errors.Is(err, unix.EBADF) || errors.Is(err, unix.ENOSYS)) {
		// clone3 refused (v1 fd, or filtered by seccomp): Go has no
		// fallback, so switch this sandbox to the ptrace placement.
		sb.place.Store(int32(placePtrace))
		return r.spawnVia(sb, spec, stdout, stderr, extra, exitCh, sp)
	}
	if pl == placePtrace && errors.Is(err, unix.EPERM) {
		// PTRACE_TRACEME refused (a seccomp or LSM policy): fall back to
		// the stub, which waits for its spec until it has been placed.
		sb.place.Store(int32(placeStub))
		return r.spawnVia(sb, spec, stdout, stderr, extra, exitCh, sp)
	}
	if err != nil {
		return 0, err
	}
	if pl == placePtrace {
		// The child stops with SIGTRAP right after its execve, before
		// running one instruction of the program: move it, then let go.
		select {
		case <-stopped:
		case st := <-exitCh:
			exitCh <- st
			return 0, fmt.Errorf("exec %q: died before it was placed", spec.Args[0])
		}
		r.rp.untrace(pid)
		perr := sb.cg.addProc(pid)
		detach := unix.PtraceDetach
		if sp != nil {
			detach = sp.detach
		}
		if err := detach(pid); err != nil && perr == nil {
			perr = fmt.Errorf("ptrace detach: %w", err)
		}
		if perr != nil {
			_ = r.rp.kill(pid, false, unix.SIGKILL)
			st := <-exitCh
			_ = st
			return 0, fmt.Errorf("placing %q in %s: %w", spec.Args[0], sb.cg.path(), perr)
		}
	}
	if pl == placeStub {
		// The stub blocks reading its spec: nothing has run yet.
		if err := sb.cg.addProc(pid); err != nil {
			_ = r.rp.kill(pid, false, unix.SIGKILL)
			<-exitCh
			return 0, fmt.Errorf("placing %q in %s: %w", spec.Args[0], sb.cg.path(), err)
		}
	}
	if err := finish(); err != nil {
		st := <-exitCh // the stub exits right after it reported
		_ = st
		return 0, err
	}
	return pid, nil
}

// watch records the exit of a started process and publishes its event.
func (r *Runtime) watch(p *process) {
	defer r.wg.Done()
	st := <-p.exitCh
	code, sig := -1, syscall.Signal(0)
	switch {
	case st.lost:
		sig = unix.SIGKILL
	case st.ws.Signaled():
		sig = st.ws.Signal()
	default:
		code = st.ws.ExitStatus()
	}
	if st.lost {
		r.killLost(p.sb, p.pid)
	}
	reason := ReasonError
	switch {
	case sig != 0:
		reason = ReasonSignaled
	case code == 0:
		reason = ReasonCompleted
	}
	if p.sb.cg != nil && reason != ReasonCompleted {
		if n, err := p.sb.cg.oomKills(); err == nil && n > p.oomBefore {
			reason = ReasonOOMKilled
		}
	}
	r.mu.Lock()
	p.state, p.finishedAt, p.exitCode, p.signal, p.reason = StateExited, st.at, code, sig, reason
	ev := ExitEvent{ID: p.id, SandboxID: p.sb.id, Pid: p.pid, ExitCode: code, Signal: sig,
		Reason: reason, StartedAt: p.startedAt, FinishedAt: st.at}
	r.mu.Unlock()
	close(p.exited)
	r.events.push(ev)
}

// Signal sends sig to the process group of a Running process (through the
// sandbox init when there is one).
func (r *Runtime) Signal(id string, sig syscall.Signal) error {
	r.mu.Lock()
	p, err := r.lookup(id)
	if err == nil && p.state != StateRunning {
		err = fmt.Errorf("signal %q: it is %s: %w", id, p.stateLocked(), ErrInvalidState)
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if err := r.signal(p, sig); err != nil {
		return fmt.Errorf("signal %s to %q: %w", unixsig.Name(sig), id, err)
	}
	return nil
}

func (r *Runtime) signal(p *process, sig syscall.Signal) error {
	if in := p.sb.init; in != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := in.call(ctx, &message{Op: opSignal, Child: p.child, Signal: int(sig)})
		return err
	}
	return r.rp.kill(p.pid, true, sig)
}

// Stop sends the stop signal to the process group, waits up to grace for
// the process to exit, then SIGKILLs every process of its sandbox (the
// sandbox init aside). It blocks until the process is Exited or ctx ends.
// Stopping an Exited process does nothing.
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) error {
	r.mu.Lock()
	p, err := r.lookup(id)
	if err == nil && p.state != StateRunning && p.state != StateExited {
		err = fmt.Errorf("stopping %q: it is %s: %w", id, p.stateLocked(), ErrInvalidState)
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case <-p.exited:
		return nil
	default:
	}
	if grace > 0 {
		if err := r.signal(p, p.stopSignal); err != nil && !errors.Is(err, ErrProcessDone) && !errors.Is(err, ErrSandboxGone) {
			r.log.Warn("sending the stop signal", "process", id, "signal", unixsig.Name(p.stopSignal), "err", err)
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.exited:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("stopping %q: %w", id, ctx.Err())
		case <-t.C:
		}
	}
	if err := r.killSandboxProcs(ctx, p.sb, p); err != nil {
		r.log.Warn("killing the sandbox's processes", "process", id, "err", err)
	}
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopping %q: waiting for the exit: %w", id, ctx.Err())
	}
}

// killSandboxProcs SIGKILLs every process of sb except its init: with a
// pid namespace the init kills everything else, with a cgroup we do,
// otherwise only p's process group can be reached.
func (r *Runtime) killSandboxProcs(ctx context.Context, sb *sandbox, p *process) error {
	switch {
	case sb.init != nil && sb.cfg.has(NamespacePID):
		_, err := sb.init.call(ctx, &message{Op: opKillAll})
		return err
	case sb.init != nil && sb.cg != nil:
		return killCgroupExcept(sb.cg, sb.init.pid)
	case sb.init != nil:
		_, err := sb.init.call(ctx, &message{Op: opKillAll})
		return err
	case sb.cg != nil:
		return sb.cg.kill()
	case p != nil:
		err := r.rp.kill(p.pid, true, unix.SIGKILL)
		if errors.Is(err, ErrProcessDone) {
			return nil
		}
		return err
	}
	return nil
}

// killCgroupExcept SIGKILLs every process in cg but keep, again and again
// until a listing shows nothing new: a process killed mid-fork may leave
// a child the previous listing did not have, and killed ones cannot fork.
func killCgroupExcept(cg cgroup, keep int) error {
	killed := make(map[int]bool)
	for range 1000 {
		pids, err := cg.procs()
		if err != nil {
			return err
		}
		fresh := 0
		for _, pid := range pids {
			if pid == keep || killed[pid] {
				continue
			}
			killed[pid] = true
			fresh++
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		if fresh == 0 {
			return nil
		}
	}
	return errors.New("processes keep appearing")
}

// Remove forgets an Exited or Created process.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, err := r.lookup(id)
	if err != nil {
		return err
	}
	if p.starting || p.state == StateRunning {
		return fmt.Errorf("removing %q: it is %s: %w", id, p.stateLocked(), ErrInvalidState)
	}
	delete(r.procs, id)
	delete(p.sb.procs, id)
	return nil
}

// Status reports a process.
func (r *Runtime) Status(id string) (ProcessStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, err := r.lookup(id)
	if err != nil {
		return ProcessStatus{}, err
	}
	return p.statusLocked(), nil
}

func (p *process) statusLocked() ProcessStatus {
	return ProcessStatus{
		ID: p.id, SandboxID: p.sb.id, State: p.state, Pid: p.pid,
		StartedAt: p.startedAt, FinishedAt: p.finishedAt,
		ExitCode: p.exitCode, Signal: p.signal, Reason: p.reason,
	}
}

// List reports the processes that match f, ordered by id.
func (r *Runtime) List(f ListFilter) []ProcessStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ProcessStatus
	for _, p := range r.procs {
		if (f.SandboxID == "" || f.SandboxID == p.sb.id) && (f.State == "" || f.State == p.state) {
			out = append(out, p.statusLocked())
		}
	}
	slices.SortFunc(out, func(a, b ProcessStatus) int { return strings.Compare(a.ID, b.ID) })
	return out
}
