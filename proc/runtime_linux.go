package proc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// runtimeOpen enforces one Runtime per process: its reaper waits for every
// child of the process, so a second one would steal the first one's exits.
var runtimeOpen atomic.Bool

// placement is how a directly forked child gets into its sandbox's cgroup.
type placement int32

const (
	placeNone   placement = iota // no cgroup
	placeFD                      // clone3 CLONE_INTO_CGROUP (v2)
	placePtrace                  // stopped at exec by PTRACE_TRACEME, moved, released (v1)
	placeStub                    // through the stub, moved before it reads its spec (no ptrace allowed)
)

// Runtime is the sandbox runtime. All methods are safe for concurrent use;
// each blocks until its transition happened or returns an error, and the
// runtime never makes a transition on its own (exits are reported on
// Events and recorded in Status).
type Runtime struct {
	log      *slog.Logger
	initPath string
	cg       cgroupRoot // nil: no usable cgroups
	cgErr    error      // why cg is nil
	rp       *reaper
	events   *eventQueue
	seq      atomic.Uint64
	// forceInit starts a sandbox init even without namespaces (tests and
	// benchmarks compare the two placements).
	forceInit bool

	unsetSubreaper bool
	closeOnce      sync.Once
	closeErr       error
	wg             sync.WaitGroup // exit watchers and init readers

	mu        sync.Mutex
	closed    bool                // guarded by mu
	sandboxes map[string]*sandbox // guarded by mu
	procs     map[string]*process // guarded by mu
}

type sandbox struct {
	id        string
	cfg       SandboxConfig
	createdAt time.Time
	cg        cgroup      // nil without a cgroup
	init      *initClient // nil: programs are forked by the runtime directly
	place     atomic.Int32

	// guarded by Runtime.mu
	deleting bool
	procs    map[string]*process
	inflight int           // Start and Exec calls under way
	drained  chan struct{} // closed when inflight drops to 0 while deleting
	execs    map[int]bool  // pids of Exec commands forked directly
}

// enterLocked registers a Start or Exec call, unless the sandbox is being
// deleted; leave ends it.
func (sb *sandbox) enterLocked() error {
	if sb.deleting {
		return fmt.Errorf("sandbox %q: %w", sb.id, ErrSandboxGone)
	}
	sb.inflight++
	return nil
}

func (r *Runtime) leave(sb *sandbox) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb.inflight--
	if sb.inflight == 0 && sb.drained != nil {
		close(sb.drained)
		sb.drained = nil
	}
}

type process struct {
	id         string
	sb         *sandbox
	cfg        ProcessConfig
	spec       *spawnSpec // resolved at Create; Path at Start
	stopSignal syscall.Signal
	child      uint64          // key at the sandbox init
	exitCh     chan exitStatus // capacity 1: the one exit report
	exited     chan struct{}   // closed once the exit is recorded

	// guarded by Runtime.mu
	state      State
	starting   bool
	pid        int
	oomBefore  uint64
	startedAt  time.Time
	finishedAt time.Time
	exitCode   int
	signal     syscall.Signal
	reason     Reason
}

// New starts a runtime: it opens the cgroup subtree (running without
// cgroups if there is none usable), becomes a child subreaper unless it is
// PID 1 or told not to, and starts the reaper. Only one Runtime may be open
// in a process, and nothing else in the process may wait for children.
func New(opts Options) (*Runtime, error) {
	if !runtimeOpen.CompareAndSwap(false, true) {
		return nil, errors.New("another proc.Runtime is open in this process: its reaper owns every wait4")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Runtime{
		log:       log,
		initPath:  opts.InitPath,
		sandboxes: make(map[string]*sandbox),
		procs:     make(map[string]*process),
	}
	if r.initPath == "" {
		r.initPath = "/proc/self/exe"
	}
	r.cg, r.cgErr = openCgroups(opts.CgroupFS, opts.CgroupRoot, opts.CgroupMode)
	if r.cgErr != nil {
		r.cg = nil
		log.Info("running without cgroups: sandboxes cannot have limits", "err", r.cgErr)
	}
	r.sweepStale()
	if os.Getpid() != 1 && !opts.NoSubreaper {
		var was int32
		_ = unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&was)), 0, 0, 0)
		if was == 0 {
			if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
				log.Warn("cannot become a child subreaper: orphans go to init", "err", err)
			} else {
				r.unsetSubreaper = true
			}
		}
	}
	r.rp = newReaper()
	r.events = newEventQueue()
	return r, nil
}

// Events delivers an ExitEvent for every started process that exits, in
// order, never dropping one (they queue without bound until read). It is
// closed by Close.
func (r *Runtime) Events() <-chan ExitEvent { return r.events.out }

// Close deletes every sandbox (killing what runs in them), stops the
// reaper and closes Events. It is idempotent.
func (r *Runtime) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		ids := make([]string, 0, len(r.sandboxes))
		for id := range r.sandboxes {
			ids = append(ids, id)
		}
		r.mu.Unlock()
		var errs []error
		for _, id := range ids {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := r.deleteSandbox(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
				errs = append(errs, err)
			}
			cancel()
		}
		r.wg.Wait()
		r.rp.close()
		r.events.close()
		if r.cg != nil {
			if err := r.cg.close(); err != nil {
				errs = append(errs, fmt.Errorf("closing cgroups: %w", err))
			}
		}
		if r.unsetSubreaper {
			_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		}
		runtimeOpen.Store(false)
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}

func (r *Runtime) newID(name string) string {
	name = strings.Map(func(c rune) rune {
		if c == '/' || c < ' ' {
			return '_'
		}
		return c
	}, name)
	if name == "" || name == "." || name == ".." {
		name = "sandbox"
	}
	// Our pid in the id keeps two supervisors sharing a cgroup subtree (or
	// the leftovers of one that was SIGKILLed) from colliding.
	return fmt.Sprintf("%s-%s-%d", name, ownerTag(), r.seq.Add(1))
}

// ownerTag names this process in ids, and so in cgroup names: its pid in
// the initial pid namespace, else its pid and namespace ("7n4026532123"),
// whose liveness a supervisor outside cannot judge, so it never sweeps them.
var ownerTag = sync.OnceValue(func() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	if ns == initPidNS {
		return strconv.Itoa(os.Getpid())
	}
	ino := strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	return fmt.Sprintf("%dn%s", os.Getpid(), ino)
})

// initPidNS is the initial pid namespace (PROC_PID_INIT_INO).
const initPidNS = "pid:[4026531836]"

// ownerOf returns the PID of an id NAME-PID-SEQ made in the initial pid
// namespace; false for any other name.
func ownerOf(id string) (int, bool) {
	rest, seq, ok := cutLast(id, "-")
	if !ok || !allDigits(seq) {
		return 0, false
	}
	_, pid, ok := cutLast(rest, "-")
	if !ok || !allDigits(pid) {
		return 0, false
	}
	n, err := strconv.Atoi(pid)
	return n, err == nil && n > 0
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// sweepStale deletes the cgroups of supervisors that died without cleaning
// up (SIGKILL, OOM, power loss of a container's PID 1 restarted in place),
// killing what still runs in them: programs that outlived their supervisor
// and would collide with their new instances. Only owners in our pid
// namespace, the initial one, can be judged dead.
func (r *Runtime) sweepStale() {
	if r.cg == nil || ownerTag() != strconv.Itoa(os.Getpid()) {
		return
	}
	names, err := r.cg.children()
	if err != nil {
		r.log.Warn("listing cgroups to sweep", "err", err)
		return
	}
	for _, name := range names {
		pid, ok := ownerOf(name)
		if !ok || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH {
			continue // ours, or its owner lives (or pid reused: left alone)
		}
		cg, err := r.cg.existing(name)
		if err != nil {
			continue
		}
		procs, _ := cg.procs()
		if err := cg.remove(); err != nil {
			r.log.Warn("removing the cgroup of a dead supervisor", "cgroup", cg.path(), "err", err)
			continue
		}
		r.log.Warn("removed the cgroup of a dead supervisor", "cgroup", cg.path(), "owner", pid, "killed", len(procs))
	}
}
