package proc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// namespaceFlag is ns's clone flag; ok is false for an unknown one. A
// switch, not a map: a package-level map is built at every start of every
// binary that links proc, supervise-init's included.
func namespaceFlag(ns Namespace) (flag uintptr, ok bool) {
	switch ns {
	case NamespacePID:
		return unix.CLONE_NEWPID, true
	case NamespaceMount:
		return unix.CLONE_NEWNS, true
	case NamespaceUTS:
		return unix.CLONE_NEWUTS, true
	case NamespaceIPC:
		return unix.CLONE_NEWIPC, true
	case NamespaceNet:
		return unix.CLONE_NEWNET, true
	case NamespaceUser:
		return unix.CLONE_NEWUSER, true
	}
	return 0, false
}

func validateSandbox(cfg SandboxConfig) error {
	for _, ns := range cfg.Namespaces {
		if _, ok := namespaceFlag(ns); !ok {
			return fmt.Errorf("unknown namespace %q (want pid, mount, uts, ipc, net or user)", ns)
		}
	}
	if cfg.Hostname != "" && !cfg.has(NamespaceUTS) {
		return errors.New("a hostname needs the uts namespace")
	}
	if cfg.NoCgroup && cfg.hasLimits() {
		return errors.New("limits need a cgroup")
	}
	if cfg.MemoryMax < 0 || cfg.CPUMax < 0 || cfg.PidsMax < 0 {
		return errors.New("negative limit")
	}
	if cfg.PidsMax > 0 && cfg.PidsMax < 8 && len(cfg.Namespaces) > 0 {
		return fmt.Errorf("pids_max %d leaves no room for the sandbox init's threads (at least 8)", cfg.PidsMax)
	}
	return nil
}

// CreateSandbox creates a sandbox: its cgroup with the limits asked for
// and, when it has namespaces, its init (PID 1 of the pid namespace) set up
// inside them. It returns the sandbox id.
func (r *Runtime) CreateSandbox(ctx context.Context, cfg SandboxConfig) (id string, retErr error) {
	if err := validateSandbox(cfg); err != nil {
		return "", fmt.Errorf("creating sandbox %q: %w", cfg.Name, err)
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return "", ErrClosed
	}
	sb := &sandbox{id: r.newID(cfg.Name), cfg: cfg, createdAt: time.Now(), procs: make(map[string]*process), execs: make(map[int]bool)}
	sb.cfg.Namespaces = slices.Clone(cfg.Namespaces)
	if err := r.attachCgroup(sb); err != nil {
		return "", err
	}
	if sb.cg != nil {
		defer func() {
			if retErr != nil {
				_ = sb.cg.remove() // kills what got in, then removes
			}
		}()
	}
	if len(cfg.Namespaces) > 0 || r.forceInit {
		in, err := r.startInit(ctx, sb)
		if err != nil {
			return "", fmt.Errorf("creating sandbox %q: starting its init: %w", cfg.Name, err)
		}
		sb.init = in
	}
	// Nothing runs in a new cgroup yet but a sandbox's init.
	sb.fresh.Store(sb.cg != nil && sb.init == nil)
	r.mu.Lock()
	closed = r.closed
	if !closed {
		r.sandboxes[sb.id] = sb
	}
	r.mu.Unlock()
	if closed {
		if sb.init != nil {
			r.killInit(sb)
			<-sb.init.reaped
		}
		return "", ErrClosed
	}
	return sb.id, nil
}

// attachCgroup gives sb its cgroup with its limits, or lets it run without
// one where that is allowed: nothing asks for limits, or limits are
// optional and the tree may not be written.
func (r *Runtime) attachCgroup(sb *sandbox) error {
	cfg := sb.cfg
	if cfg.NoCgroup {
		return nil
	}
	if r.cg == nil {
		if !cfg.hasLimits() {
			return nil
		}
		if errors.Is(r.cgErr, fs.ErrPermission) {
			return r.cgroupDenied(cfg, r.cgErr)
		}
		return fmt.Errorf("creating sandbox %q: limits asked: %w: %v", cfg.Name, ErrCgroupsUnavailable, r.cgErr)
	}
	cg, err := r.cg.create(sb.id, cfg)
	switch {
	case err != nil && errors.Is(err, fs.ErrPermission) && !cfg.hasLimits():
		// A supervisor that may not write the cgroup tree (not root;
		// root made the subtree) runs what asks for no limits without a
		// cgroup, as it would with none at all.
		r.sayNoCgroup(err)
	case err != nil && errors.Is(err, fs.ErrPermission):
		if err := r.cgroupDenied(cfg, err); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("creating sandbox %q: creating cgroup: %w", cfg.Name, err)
	}
	if cg == nil {
		return nil
	}
	sb.cg = cg
	if r.cg.v2() {
		sb.place.Store(int32(placeFD))
	} else {
		sb.place.Store(int32(placePtrace))
	}
	return nil
}

// cgroupDenied answers a sandbox with limits that the cgroup tree may not
// be written for: it runs without them when limits are optional.
func (r *Runtime) cgroupDenied(cfg SandboxConfig, err error) error {
	if r.limitsOptional {
		r.sayNoLimits(cfg.Name, err)
		return nil
	}
	return errNotPermitted(cfg.Name, err)
}

func defaultIDMap(own int) []syscall.SysProcIDMap {
	if own != 0 {
		return []syscall.SysProcIDMap{{ContainerID: 0, HostID: own, Size: 1}}
	}
	return []syscall.SysProcIDMap{{ContainerID: 0, HostID: DefaultUserNSHostID, Size: 65536}}
}

func idMaps(m []IDMap, own int) []syscall.SysProcIDMap {
	if len(m) == 0 {
		return defaultIDMap(own)
	}
	out := make([]syscall.SysProcIDMap, len(m))
	for i, e := range m {
		out[i] = syscall.SysProcIDMap{ContainerID: e.ContainerID, HostID: e.HostID, Size: e.Size}
	}
	return out
}

// startInit forks the sandbox init into the namespaces and the cgroup and
// sets it up. The init blocks on its first message until it has been
// placed, so nothing it starts can run outside the cgroup.
func (r *Runtime) startInit(ctx context.Context, sb *sandbox) (in *initClient, retErr error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "init")
	defer theirs.Close()
	conn, err := packetConn(os.NewFile(uintptr(fds[0]), "init"))
	if err != nil {
		return nil, err
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		conn.Close()
		return nil, err
	}
	defer null.Close()

	cfg := sb.cfg
	sys := &syscall.SysProcAttr{Setsid: true}
	for _, ns := range cfg.Namespaces {
		f, _ := namespaceFlag(ns)
		sys.Cloneflags |= f
	}
	if cfg.has(NamespaceUser) {
		sys.UidMappings = idMaps(cfg.UIDMappings, os.Geteuid())
		sys.GidMappings = idMaps(cfg.GIDMappings, os.Getegid())
		sys.GidMappingsEnableSetgroups = os.Geteuid() == 0
		// Become the namespace's root before exec: an exec by an unmapped
		// uid would drop every capability the new namespace gave us.
		// /proc/self/exe still opens as its magic link, without a path
		// walk the new uid might not be allowed.
		sys.Credential = &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: os.Geteuid() != 0}
	}
	var cgfd = -1
	if sb.cg != nil && placement(sb.place.Load()) == placeFD {
		if cgfd, err = sb.cg.openFD(); err != nil {
			sb.place.Store(int32(placePtrace))
			cgfd = -1
		} else {
			defer unix.Close(cgfd)
		}
	}
	pidNS := cfg.has(NamespacePID)
	client := newInitClient(0, pidNS, conn)
	fork := func(sys *syscall.SysProcAttr) (int, error) {
		return r.rp.spawn(func() (int, error) {
			return syscall.ForkExec(r.initPath, []string{initArgv0, roleSandbox}, &syscall.ProcAttr{
				Env:   []string{"GOMAXPROCS=1"},
				Files: []uintptr{null.Fd(), null.Fd(), os.Stderr.Fd(), theirs.Fd()},
				Sys:   sys,
			})
		}, func(ws unix.WaitStatus) {
			if ws.Exited() || ws.Signaled() {
				close(client.reaped)
			}
		})
	}
	var pid int
	if cgfd >= 0 {
		withFD := *sys
		withFD.UseCgroupFD, withFD.CgroupFD = true, cgfd
		pid, err = fork(&withFD)
		if errors.Is(err, unix.EBADF) || errors.Is(err, unix.ENOSYS) {
			// v1 fd, or clone3 filtered by seccomp: Go has no fallback.
			sb.place.Store(int32(placePtrace))
			cgfd = -1
			pid, err = fork(sys)
		}
	} else {
		pid, err = fork(sys)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("exec %s: %w", r.initPath, err)
	}
	theirs.Close()
	client.pid = pid
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		client.readLoop()
	}()
	defer func() {
		if retErr != nil {
			_ = r.rp.kill(pid, false, unix.SIGKILL)
			conn.Close()
			<-client.gone
			<-client.reaped
		}
	}()
	if sb.cg != nil && cgfd < 0 {
		if err := sb.cg.addProc(pid); err != nil {
			return nil, fmt.Errorf("placing the init in %s: %w", sb.cg.path(), err)
		}
	}
	setup := &initSetup{
		PrivateRoot: cfg.has(NamespaceMount),
		MountProc:   cfg.has(NamespaceMount) && pidNS,
		Hostname:    cfg.Hostname,
		Loopback:    cfg.has(NamespaceNet),
	}
	if _, err := client.call(ctx, &message{Op: opSetup, Setup: setup}); err != nil {
		return nil, fmt.Errorf("setting up: %w", err)
	}
	return client, nil
}

// SandboxStatus reports a sandbox.
func (r *Runtime) SandboxStatus(id string) (SandboxStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, ok := r.sandboxes[id]
	if !ok {
		return SandboxStatus{}, fmt.Errorf("sandbox %q: %w", id, ErrNotFound)
	}
	st := SandboxStatus{ID: sb.id, Name: sb.cfg.Name, State: SandboxReady, CreatedAt: sb.createdAt}
	if sb.cg != nil {
		st.CgroupPath = sb.cg.path()
	}
	if sb.init != nil {
		st.InitPid = sb.init.pid
		if sb.init.isDead() {
			st.State = SandboxNotReady
		}
	}
	for pid := range sb.procs {
		st.Processes = append(st.Processes, pid)
	}
	slices.Sort(st.Processes)
	return st, nil
}

// ResetSandbox kills every process left in the sandbox but its init, so
// that the sandbox can take the next process of a restarting program
// without the cost of a new one: for a sandbox with namespaces, its init's
// start-up and the namespaces' teardown (tens of ms). The sandbox's own
// processes must all have exited. It fails with ErrSandboxGone when the
// sandbox cannot be reused (its init died, or it is being deleted): the
// caller then deletes it and creates another.
func (r *Runtime) ResetSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	sb, ok := r.sandboxes[id]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("resetting sandbox %q: %w", id, ErrNotFound)
	}
	if sb.deleting || (sb.init != nil && sb.init.isDead()) {
		r.mu.Unlock()
		return fmt.Errorf("resetting sandbox %q: %w", id, ErrSandboxGone)
	}
	for _, p := range sb.procs {
		if p.starting || p.state == StateRunning {
			r.mu.Unlock()
			return fmt.Errorf("resetting sandbox %q: process %q is still running", id, p.id)
		}
	}
	if err := sb.enterLocked(); err != nil {
		r.mu.Unlock()
		return err
	}
	r.mu.Unlock()
	defer r.leave(sb)
	if err := r.killSandboxProcs(ctx, sb, nil); err != nil {
		return fmt.Errorf("resetting sandbox %q: %w", id, err)
	}
	return nil
}

// Stats reads a sandbox's usage from its cgroup (ErrNoCgroup without one).
func (r *Runtime) Stats(id string) (Stats, error) {
	return r.readStats(id, cgroup.stats)
}

// Usage is Stats without Pids and OOMKills: half the reads, for a status
// page that shows memory and CPU.
func (r *Runtime) Usage(id string) (Stats, error) {
	return r.readStats(id, cgroup.usage)
}

func (r *Runtime) readStats(id string, read func(cgroup) (Stats, error)) (Stats, error) {
	r.mu.Lock()
	sb, ok := r.sandboxes[id]
	r.mu.Unlock()
	if !ok {
		return Stats{}, fmt.Errorf("sandbox %q: %w", id, ErrNotFound)
	}
	if sb.cg == nil {
		return Stats{}, fmt.Errorf("stats of sandbox %q: %w", id, ErrNoCgroup)
	}
	s, err := read(sb.cg)
	if err != nil {
		return Stats{}, fmt.Errorf("stats of sandbox %q: %w", id, err)
	}
	return s, nil
}

// DeleteSandbox kills everything left in the sandbox (its cgroup, its pid
// namespace, else its process groups), waits for the exits, removes the
// cgroup and forgets the sandbox and its processes.
func (r *Runtime) DeleteSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return r.deleteSandbox(ctx, id)
}

func (r *Runtime) deleteSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	sb, ok := r.sandboxes[id]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("sandbox %q: %w", id, ErrNotFound)
	}
	sb.deleting = true
	drained := sb.drained
	if sb.inflight > 0 && drained == nil {
		sb.drained = make(chan struct{})
		drained = sb.drained
	}
	r.mu.Unlock()

	if drained != nil {
		// Starts and Execs under way: kill what they may have started,
		// let them return, then kill again below whatever they started
		// after this first pass.
		r.killAll(ctx, sb)
		select {
		case <-drained:
		case <-ctx.Done():
			return fmt.Errorf("deleting sandbox %q: waiting for calls under way: %w", id, ctx.Err())
		}
	}
	r.mu.Lock()
	var running []*process
	for _, p := range sb.procs {
		if p.state == StateRunning {
			running = append(running, p)
		}
	}
	r.mu.Unlock()

	var errs []error
	switch {
	case sb.cg != nil:
		// Delete kills everything in the cgroup, the init included, waits
		// until it is empty and removes it: one freeze instead of two.
		if err := sb.cg.remove(); err != nil {
			errs = append(errs, fmt.Errorf("removing cgroup: %w", err))
		}
	case sb.init == nil:
		r.killGroups(sb)
	}
	r.stopInit(ctx, sb)
	if sb.init != nil {
		select {
		case <-sb.init.reaped:
		case <-ctx.Done():
			return fmt.Errorf("deleting sandbox %q: waiting for its init: %w", id, ctx.Err())
		}
	}
	for _, p := range running {
		select {
		case <-p.exited:
		case <-ctx.Done():
			return fmt.Errorf("deleting sandbox %q: waiting for %q to exit: %w", id, p.id, ctx.Err())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deleting sandbox %q: %w", id, err)
	}
	r.mu.Lock()
	delete(r.sandboxes, id)
	for pid := range sb.procs {
		delete(r.procs, pid)
	}
	r.mu.Unlock()
	return nil
}

// killLost kills what may be left of a child whose init died: without a
// pid namespace nothing took it along. It was re-parented to us (we are a
// subreaper), so its pid is ours until our reaper collects it.
func (r *Runtime) killLost(sb *sandbox, pid int) {
	switch {
	case sb.cfg.has(NamespacePID):
	case sb.cg != nil:
		_ = sb.cg.kill()
	case pid > 0:
		_ = unix.Kill(-pid, unix.SIGKILL)
	}
}

// killAll SIGKILLs everything in the sandbox, its init included.
func (r *Runtime) killAll(ctx context.Context, sb *sandbox) {
	switch {
	case sb.cg != nil:
		_ = sb.cg.kill()
	case sb.init == nil:
		r.killGroups(sb)
	}
	r.stopInit(ctx, sb)
}

// stopInit ends the sandbox init. With a pid namespace or a cgroup a
// SIGKILL does (the namespace dies with it, the cgroup was killed).
// Otherwise its children would outlive it: we close our sending side, and
// the init, which serves requests in order, kills every child it started
// (none can be started after that), waits for them and exits. SIGKILL
// follows if it has not exited in 5 s.
func (r *Runtime) stopInit(ctx context.Context, sb *sandbox) {
	in := sb.init
	if in == nil {
		return
	}
	if !sb.cfg.has(NamespacePID) && sb.cg == nil && in.conn != nil {
		in.wmu.Lock()
		_ = in.conn.CloseWrite()
		in.wmu.Unlock()
		t := time.NewTimer(5 * time.Second)
		defer t.Stop()
		select {
		case <-in.reaped:
			return
		case <-t.C:
		case <-ctx.Done():
		}
	}
	r.killInit(sb)
}

// killGroups SIGKILLs the process groups of a sandbox without cgroup or
// init: its running programs and its Exec commands.
func (r *Runtime) killGroups(sb *sandbox) {
	r.mu.Lock()
	var pids []int
	for _, p := range sb.procs {
		if p.state == StateRunning && p.pid > 0 {
			pids = append(pids, p.pid)
		}
	}
	for pid := range sb.execs {
		pids = append(pids, pid)
	}
	r.mu.Unlock()
	for _, pid := range pids {
		_ = r.rp.kill(pid, true, unix.SIGKILL)
	}
}

// killInit SIGKILLs the sandbox init; its socket closes when it is gone.
func (r *Runtime) killInit(sb *sandbox) {
	if sb.init == nil {
		return
	}
	if err := r.rp.kill(sb.init.pid, false, unix.SIGKILL); err != nil && !errors.Is(err, ErrProcessDone) {
		r.log.Warn("killing sandbox init", "sandbox", sb.id, "pid", sb.init.pid, "err", err)
	}
}

// sayNoCgroup says once that a supervisor which may not write the cgroup
// tree (an ordinary user's) runs programs that ask for no limits without a
// cgroup: the same words whether the tree is missing or root's.
func (r *Runtime) sayNoCgroup(err error) {
	r.noCgroupOnce.Do(func() {
		r.log.Warn("no cgroup for programs without limits: this user may not create cgroups here; their leftovers are not killed with a cgroup",
			"uid", os.Getuid(), "err", err)
	})
}

// sayNoLimits says once that sandboxes that ask for limits run without
// them (Options.LimitsBestEffort).
func (r *Runtime) sayNoLimits(name string, err error) {
	r.noLimitsOnce.Do(func() {
		r.log.Warn("limits not applied: this user may not create cgroups here; programs run without their memory, CPU and pids limits (run as root, or in a delegated cgroup, to have them)",
			"first", name, "uid", os.Getuid(), "err", err)
	})
}

// errNotPermitted is the start error of a sandbox that asks for limits
// from a supervisor that may not create cgroups.
func errNotPermitted(name string, err error) error {
	return fmt.Errorf("creating sandbox %q: limits asked, but uid %d may not create cgroups: %w (run supervise as root, or delegate a cgroup subtree to this user)",
		name, os.Getuid(), err)
}
