package proc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// The hand-over of a runtime to a new supervise binary in the same
// process (an upgrade by execve): Freeze stops the reaper and lists what
// runs, the state crosses the exec, and New with Options.Adopt takes it
// over. execve keeps the pid and the children, so the programs never
// notice; a child that exits meanwhile stays a zombie until the new
// reaper collects it.

// Limits on a snapshot read back: it is the input of another binary.
const (
	maxSnapshotSandboxes = 100000
	maxSnapshotIDLen     = 512
)

// Freeze stops reaping and lists every sandbox and process, for a
// hand-over. Until thaw is called no child is reaped and no process or
// sandbox is created, started or removed; the caller either execs (the
// new binary adopts the snapshot) or thaws. A sandbox init is left
// running: its control socket is passed on (Snapshot.Files), and our
// reading of it stops here, so that an exit it reports from now on is
// read by the binary that adopts it.
func (r *Runtime) Freeze(ctx context.Context) (snap Snapshot, thaw func(), err error) {
	// A start or an exec under way (a probe's command, a hook) is waited
	// for: each is short, and bounded by its own timeout.
	for {
		r.mu.Lock()
		busy := ""
		for _, sb := range r.sandboxes {
			if sb.inflight > 0 {
				busy = sb.cfg.Name
			}
		}
		if busy == "" {
			break
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return Snapshot{}, nil, fmt.Errorf("sandbox %s: a start or exec is under way: %w", busy, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	// The inits' readers stop: an unread exit report stays in its socket.
	var release []func()
	for _, sb := range r.sandboxes {
		if sb.init != nil {
			release = append(release, sb.init.hold())
		}
	}
	// With the reaper's registry locked nothing is reaped: a registered
	// pid is a live process or an unreaped zombie of ours.
	r.rp.mu.Lock()
	unhold := func() {
		r.rp.mu.Unlock()
		for _, f := range release {
			f()
		}
	}
	thaw = func() {
		unhold()
		r.mu.Unlock()
		// What exited while frozen sent SIGCHLD to a reaper that could
		// not act: look again.
		select {
		case r.rp.sigs <- unix.SIGCHLD:
		default:
		}
	}
	var reaped []*process
	for _, p := range r.procs {
		if p.state != StateRunning {
			continue
		}
		// Its exit read (from the reaper or its init) but not recorded.
		if in := p.sb.init; in != nil && !in.tracks(p.child) {
			reaped = append(reaped, p)
		} else if _, ok := r.rp.waiting[p.pid]; in == nil && !ok {
			reaped = append(reaped, p)
		}
	}
	if len(reaped) > 0 {
		// Reaped just before the freeze: their watchers record the exit
		// under r.mu, which we must let go of to wait for them.
		r.mu.Unlock()
		for _, p := range reaped {
			select {
			case <-p.exited:
			case <-ctx.Done():
				unhold()
				return Snapshot{}, nil, fmt.Errorf("waiting for an exit to be recorded: %w", ctx.Err())
			}
		}
		r.mu.Lock()
	}
	snap = Snapshot{OwnerTag: ownerTag(), Seq: r.seq.Load()}
	for _, sb := range r.sandboxes {
		ss := SandboxSnapshot{ID: sb.id, Config: sb.cfg, CreatedAt: sb.createdAt, Cgroup: sb.cg != nil, Place: sb.place.Load()}
		if in := sb.init; in != nil {
			is, f, err := r.snapshotInit(in)
			if err != nil {
				thaw()
				return Snapshot{}, nil, fmt.Errorf("sandbox %s: %w", sb.id, err)
			}
			ss.Init = is
			if f != nil {
				snap.files = append(snap.files, f)
			}
		}
		for _, p := range sb.procs {
			ps := ProcessSnapshot{ID: p.id, Pid: p.pid, StartedAt: p.startedAt, StopSignal: p.stopSignal, OOMBefore: p.oomBefore, Child: p.child}
			switch {
			case p.starting || p.state == StateCreated:
				thaw()
				return Snapshot{}, nil, fmt.Errorf("process %s is being started", p.id)
			case p.state == StateExited:
				ev := ExitEvent{ID: p.id, SandboxID: sb.id, Pid: p.pid, ExitCode: p.exitCode, Signal: p.signal,
					Reason: p.reason, StartedAt: p.startedAt, FinishedAt: p.finishedAt}
				ps.Exit = &ev
			}
			ss.Processes = append(ss.Processes, ps)
		}
		slices.SortFunc(ss.Processes, func(a, b ProcessSnapshot) int { return cmpString(a.ID, b.ID) })
		snap.Sandboxes = append(snap.Sandboxes, ss)
	}
	slices.SortFunc(snap.Sandboxes, func(a, b SandboxSnapshot) int { return cmpString(a.ID, b.ID) })
	return snap, thaw, nil
}

// snapshotInit describes a held init (r.rp.mu held) and returns the
// file of its control socket, nil when the init is gone.
func (r *Runtime) snapshotInit(in *initClient) (*InitSnapshot, *os.File, error) {
	_, waiting := r.rp.waiting[in.pid]
	is := &InitSnapshot{Pid: in.pid, PidNS: in.pidNS, FD: -1, Reaped: !waiting}
	in.mu.Lock()
	dead := in.dead
	is.Seq = in.seq
	in.mu.Unlock()
	if dead {
		return is, nil, nil
	}
	rc, err := in.conn.f.SyscallConn()
	if err != nil {
		return nil, nil, fmt.Errorf("its init's socket: %w", err)
	}
	if err := rc.Control(func(fd uintptr) { is.FD = int(fd) }); err != nil {
		return nil, nil, fmt.Errorf("its init's socket: %w", err)
	}
	return is, in.conn.f, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Validate checks a snapshot read from outside: ids well formed and
// unique, every pid a child of this process, an owner tag naming us.
func (s *Snapshot) Validate() error {
	o, ok := ownerOf("x-" + s.OwnerTag + "-1")
	if !ok || o.otherNS != isOtherNS() {
		return fmt.Errorf("owner tag %q is not one of ours", s.OwnerTag)
	}
	if !o.otherNS && o.pid != os.Getpid() || o.otherNS && !hasPrefixPid(s.OwnerTag) {
		return fmt.Errorf("owner tag %q names another process", s.OwnerTag)
	}
	if len(s.Sandboxes) > maxSnapshotSandboxes {
		return fmt.Errorf("%d sandboxes, at most %d", len(s.Sandboxes), maxSnapshotSandboxes)
	}
	ids := map[string]bool{}
	pids := map[int]bool{}
	me := os.Getpid()
	for _, sb := range s.Sandboxes {
		if err := checkID(sb.ID, ids); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		if err := validateSandbox(sb.Config); err != nil {
			return fmt.Errorf("sandbox %s: %w", sb.ID, err)
		}
		if len(sb.Config.Namespaces) > 0 && sb.Init == nil {
			return fmt.Errorf("sandbox %s has namespaces but no init", sb.ID)
		}
		parent := me // of its running processes
		if in := sb.Init; in != nil {
			if err := checkInit(in, s.Seq, pids, me); err != nil {
				return fmt.Errorf("sandbox %s: %w", sb.ID, err)
			}
			parent = in.Pid
		}
		children := map[uint64]bool{}
		if sb.Place < int32(placeNone) || sb.Place > int32(placeStub) {
			return fmt.Errorf("sandbox %s: placement %d", sb.ID, sb.Place)
		}
		if len(sb.Processes) > 16 {
			return fmt.Errorf("sandbox %s: %d processes", sb.ID, len(sb.Processes))
		}
		for _, p := range sb.Processes {
			if err := checkID(p.ID, ids); err != nil {
				return fmt.Errorf("process: %w", err)
			}
			// A pid an init could not tell (the child gone at once) is 0.
			if p.Pid <= 1 && !(p.Pid == 0 && sb.Init != nil) || p.Pid < 0 || p.Pid > 0 && pids[p.Pid] {
				return fmt.Errorf("process %s: pid %d", p.ID, p.Pid)
			}
			if p.Pid > 0 {
				pids[p.Pid] = true
			}
			if p.StopSignal <= 0 || p.StopSignal > 64 {
				return fmt.Errorf("process %s: stop signal %d", p.ID, p.StopSignal)
			}
			if p.Exit != nil {
				if p.Exit.ID != p.ID || p.Exit.SandboxID != sb.ID {
					return fmt.Errorf("process %s: its exit names another", p.ID)
				}
				continue
			}
			if sb.Init != nil {
				// Its exit comes from the init, by its key.
				if p.Child == 0 || p.Child > s.Seq || children[p.Child] || sb.Init.FD < 0 {
					return fmt.Errorf("process %s: key %d at a live init", p.ID, p.Child)
				}
				children[p.Child] = true
				if p.Pid == 0 {
					continue
				}
				// Gone already: its init reaped it, and its report is
				// in the socket. It is signalled by key, not by pid.
				if _, err := os.Stat("/proc/" + strconv.Itoa(p.Pid)); errors.Is(err, fs.ErrNotExist) {
					continue
				}
			}
			// A running one must be our child, or its init's: its parent
			// is that (a zombie's too, until reaped).
			if ppid, err := parentOf(p.Pid); err != nil || ppid != parent {
				return fmt.Errorf("process %s: pid %d is not a child of ours", p.ID, p.Pid)
			}
		}
	}
	return nil
}

// checkInit checks a sandbox init of a snapshot: a child of ours unless
// reaped, its socket a descriptor number unless it is gone.
func checkInit(in *InitSnapshot, seq uint64, pids map[int]bool, me int) error {
	if in.Pid <= 1 || pids[in.Pid] || in.FD < -1 || in.FD > 1<<20 || in.FD >= 0 && in.FD < 3 {
		return fmt.Errorf("init pid %d, descriptor %d", in.Pid, in.FD)
	}
	pids[in.Pid] = true
	if in.Reaped {
		if in.FD >= 0 {
			return fmt.Errorf("init %d is reaped but its socket is open", in.Pid)
		}
		return nil
	}
	if ppid, err := parentOf(in.Pid); err != nil || ppid != me {
		return fmt.Errorf("init pid %d is not a child of ours", in.Pid)
	}
	return nil
}

func checkID(id string, seen map[string]bool) error {
	if id == "" || len(id) > maxSnapshotIDLen || seen[id] {
		return fmt.Errorf("id %q empty, too long or repeated", id)
	}
	if _, ok := ownerOf(id); !ok {
		return fmt.Errorf("id %q is not a runtime id", id)
	}
	seen[id] = true
	return nil
}

func isOtherNS() bool {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns != initPidNS
}

func hasPrefixPid(tag string) bool {
	p := strconv.Itoa(os.Getpid()) + "n"
	return len(tag) > len(p) && tag[:len(p)] == p
}

// parentOf reads the parent pid of pid from /proc/PID/stat.
func parentOf(pid int) (int, error) {
	b, err := readSmall("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := lastIndexByte(b, ')')
	if i < 0 || i+4 >= len(b) {
		return 0, errors.New("short stat")
	}
	var state byte
	var ppid int
	if _, err := fmt.Sscanf(string(b[i+2:]), "%c %d", &state, &ppid); err != nil {
		return 0, err
	}
	return ppid, nil
}

func lastIndexByte(b []byte, c byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// adopt takes over what snap lists; New calls it before the reaper's
// first look, so an exit that happened during the exec is a zombie it
// collects and reports as usual.
func (r *Runtime) adopt(snap *Snapshot, files map[int]*os.File) ([]ExitEvent, map[int]exitFunc, error) {
	r.seq.Store(snap.Seq)
	var exits []ExitEvent
	waiting := map[int]exitFunc{}
	// Every init's socket first: a snapshot refused leaves nothing begun
	// (no reader started), for the previous binary to take back.
	inits := map[string]*initClient{}
	for _, ss := range snap.Sandboxes {
		if ss.Init != nil && ss.Init.FD >= 0 && files[ss.Init.FD] == nil {
			return nil, nil, fmt.Errorf("sandbox %s: its init's socket, descriptor %d, was not passed", ss.ID, ss.Init.FD)
		}
	}
	for _, ss := range snap.Sandboxes {
		if is := ss.Init; is != nil {
			in, err := r.adoptInit(is, files, waiting)
			if err != nil {
				return nil, nil, fmt.Errorf("sandbox %s: %w", ss.ID, err)
			}
			inits[ss.ID] = in
		}
	}
	for _, ss := range snap.Sandboxes {
		sb := &sandbox{id: ss.ID, cfg: ss.Config, createdAt: ss.CreatedAt, procs: map[string]*process{}, execs: map[int]bool{}}
		sb.init = inits[ss.ID]
		if ss.Cgroup {
			var cg cgroup
			err := errors.New("cgroups are not usable now")
			if r.cg != nil {
				cg, err = r.cg.existing(ss.ID)
			}
			if err != nil {
				// Its cgroup is gone (a deletion that did not finish):
				// what runs there is adopted all the same, without one.
				r.log.Warn("adopting a sandbox whose cgroup is gone", "sandbox", ss.ID, "err", err)
				ss.Place = int32(placeNone)
			} else {
				sb.cg = cg
			}
		}
		sb.place.Store(ss.Place)
		for _, ps := range ss.Processes {
			p := &process{
				id: ps.ID, sb: sb, stopSignal: ps.StopSignal,
				exitCh: make(chan exitStatus, 1), exited: make(chan struct{}),
				state: StateRunning, pid: ps.Pid, oomBefore: ps.OOMBefore, startedAt: ps.StartedAt, child: ps.Child,
			}
			if e := ps.Exit; e != nil {
				p.state, p.finishedAt, p.exitCode, p.signal, p.reason = StateExited, e.FinishedAt, e.ExitCode, e.Signal, e.Reason
				close(p.exited)
				exits = append(exits, *e)
			} else if sb.init != nil {
				sb.init.children[p.child] = p.exitCh
				r.wg.Add(1)
				go r.watch(p)
			} else {
				exitCh := p.exitCh
				waiting[p.pid] = func(ws unix.WaitStatus) {
					if !ws.Stopped() {
						exitCh <- exitStatus{ws: ws, at: time.Now()}
					}
				}
				r.wg.Add(1)
				go r.watch(p)
			}
			r.procs[p.id] = p
			sb.procs[p.id] = p
		}
		r.sandboxes[sb.id] = sb
	}
	// The children are registered: what the inits report can be read.
	for _, in := range inits {
		if in.conn != nil {
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				in.readLoop()
			}()
		}
	}
	return exits, waiting, nil
}

// adoptInit takes over a sandbox init: its socket (taken out of files)
// and its exit, which the reaper collects (waiting).
func (r *Runtime) adoptInit(is *InitSnapshot, files map[int]*os.File, waiting map[int]exitFunc) (*initClient, error) {
	in := newInitClient(is.Pid, is.PidNS, nil)
	in.seq = is.Seq
	if is.FD >= 0 {
		f := files[is.FD]
		delete(files, is.FD)
		conn, err := fileConn(f)
		if err != nil {
			return nil, fmt.Errorf("adopting its init's socket: %w", err)
		}
		in.conn = conn
	} else {
		in.dead = true
		close(in.gone)
	}
	if is.Reaped {
		close(in.reaped)
	} else {
		reaped := in.reaped
		waiting[is.Pid] = func(ws unix.WaitStatus) {
			if ws.Exited() || ws.Signaled() {
				close(reaped)
			}
		}
	}
	return in, nil
}
