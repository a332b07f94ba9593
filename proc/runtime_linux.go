package proc

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
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
	sp       *spawnerClient // forks programs when we hold many descriptors
	events   *eventQueue
	seq      atomic.Uint64
	// forceInit starts a sandbox init even without namespaces (tests and
	// benchmarks compare the two placements).
	forceInit bool

	unsetSubreaper bool
	swept          []Swept // what sweepStale removed, set before New returns
	closeOnce      sync.Once
	closeErr       error
	noCgroupOnce   sync.Once      // says once that sandboxes go without a cgroup
	limitsOptional bool           // Options.LimitsBestEffort
	noLimitsOnce   sync.Once      // says once that limits were dropped
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
	// fresh: sb.cg was made for it and nothing was forked into it yet (no
	// sandbox init either), so its OOM-kill count is 0 without reading it:
	// a cold start of many programs saves a file read each.
	fresh atomic.Bool

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
		log:            log,
		initPath:       opts.InitPath,
		limitsOptional: opts.LimitsBestEffort,
		sandboxes:      make(map[string]*sandbox),
		procs:          make(map[string]*process),
	}
	if r.initPath == "" {
		r.initPath = "/proc/self/exe"
	}
	r.cg, r.cgErr = openCgroups(opts.CgroupFS, opts.CgroupRoot, opts.CgroupMode)
	switch {
	case r.cgErr != nil && errors.Is(r.cgErr, fs.ErrPermission):
		r.cg = nil
		r.sayNoCgroup(r.cgErr)
	case r.cgErr != nil:
		r.cg = nil
		log.Info("running without cgroups: sandboxes cannot have limits", "err", r.cgErr)
	}
	if opts.Adopt != nil {
		if err := opts.Adopt.Validate(); err != nil {
			runtimeOpen.Store(false)
			return nil, fmt.Errorf("adopting the runtime of the previous binary: %w", err)
		}
		inheritedTag = opts.Adopt.OwnerTag
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
	r.events = newEventQueue()
	waiting := map[int]exitFunc{}
	if opts.Adopt != nil {
		exits, w, err := r.adopt(opts.Adopt, opts.AdoptFiles)
		if err != nil {
			r.events.close()
			runtimeOpen.Store(false)
			return nil, fmt.Errorf("adopting the runtime of the previous binary: %w", err)
		}
		waiting = w
		for _, ev := range exits {
			r.events.push(ev)
		}
	}
	r.rp = newReaper(waiting)
	r.sp = newSpawnerClient(log, r.initPath, r.rp, opts.Spawner)
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
		r.sp.close()
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
	// The owner tag in the id keeps two supervisors sharing a cgroup
	// subtree, and a supervisor and the leftovers of an earlier one, from
	// ever asking for the same name.
	return fmt.Sprintf("%s-%s-%d", name, ownerTag(), r.seq.Add(1))
}

// ownerTag names this supervisor run in ids, and so in cgroup names: in the
// initial pid namespace its pid and "s" and its start time
// ("812s4711"), else its pid and namespace ("7n4026532123"), then "r" and
// a random part drawn at start. The pid and start time let a supervisor in
// the initial namespace judge whether the owner lives, and tell it from a
// process that got the pid later; the random part keeps names apart when a
// pid comes back, and the kernel reuses pid namespace inodes: a
// container's PID 1 restarted after a SIGKILL has the same pid and may get
// the same namespace.
var ownerTag = sync.OnceValue(func() string {
	if inheritedTag != "" {
		return inheritedTag // a new binary after an upgrade: the same run
	}
	// Not crypto/rand: it would link the whole of crypto into the inits.
	// Not blocking either (a PID 1 may start before the pool is ready):
	// the clock serves as well for keeping names apart.
	var b [4]byte
	if n, err := unix.Getrandom(b[:], unix.GRND_NONBLOCK); err != nil || n < len(b) {
		binary.NativeEndian.PutUint32(b[:], uint32(time.Now().UnixNano()))
	}
	run := "r" + hex.EncodeToString(b[:])
	ns, _ := os.Readlink("/proc/self/ns/pid")
	if ns == initPidNS {
		start := ""
		if t := selfStartTime(); t != 0 {
			start = "s" + strconv.FormatUint(t, 10)
		}
		return strconv.Itoa(os.Getpid()) + start + run
	}
	ino := strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	return fmt.Sprintf("%dn%s%s", os.Getpid(), ino, run)
})

// inheritedTag is the owner tag of the binary this one replaced by an
// upgrade, set by New before anything asks for ownerTag.
var inheritedTag string

// initPidNS is the initial pid namespace (PROC_PID_INIT_INO).
const initPidNS = "pid:[4026531836]"

// owner is what a cgroup name says of the supervisor that made it.
type owner struct {
	sandbox string // the sandbox's name: a program's name and instance
	tag     string // the whole owner field
	pid     int    // its pid, in the initial pid namespace; 0 otherwise
	start   uint64 // its start time in clock ticks after boot; 0: not recorded
	otherNS bool   // made in another pid namespace: its pid says nothing here
}

// ownerOf reads the owner of an id NAME-TAG-SEQ, where TAG is PID,
// PIDsSTART or PIDnINO, each optionally followed by rRANDOM (names of
// earlier versions have neither START nor RANDOM); ok is false for any
// other name, which is never swept.
func ownerOf(id string) (o owner, ok bool) {
	rest, seq, ok := cutLast(id, "-")
	if !ok || !allDigits(seq) {
		return owner{}, false
	}
	sandbox, tag, ok := cutLast(rest, "-")
	if !ok {
		return owner{}, false
	}
	o.sandbox, o.tag = sandbox, tag
	core, random, hasRandom := strings.Cut(tag, "r")
	if hasRandom && (random == "" || !isHex(random)) {
		return owner{}, false
	}
	core, start, hasStart := strings.Cut(core, "s")
	pid, ino, inNS := strings.Cut(core, "n")
	if !allDigits(pid) || inNS && (!allDigits(ino) || hasStart) || hasStart && !allDigits(start) {
		return owner{}, false
	}
	if hasStart {
		t, err := strconv.ParseUint(start, 10, 64)
		if err != nil || t == 0 {
			return owner{}, false
		}
		o.start = t
	}
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return owner{}, false
	}
	if inNS {
		o.otherNS = true
	} else {
		o.pid = n
	}
	return o, true
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

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// leftoverWait bounds how long the start waits for the processes a sweep
// killed to be gone.
const leftoverWait = 10 * time.Second

// Swept returns what the start's sweep removed, for the supervisor to
// record as events: the log line alone is gone once the console scrolls.
func (r *Runtime) Swept() []Swept { return r.swept }

// sweepStale deletes the cgroups of supervisors that died without cleaning
// up (SIGKILL, OOM, power loss of a container's PID 1 restarted in place),
// killing what still runs in them: programs that outlived their supervisor
// and would collide with their new instances (a lock file naming a pid
// that is still there, a lock the old instance holds). What is provably
// dead goes:
//
//   - a cgroup whose owner was in the initial pid namespace, as we are, and
//     is dead or dying (see ownerLives): a supervisor started again at once
//     finds its SIGKILLed predecessor still exiting, or a zombie its parent
//     has not reaped, and must not wait for that parent;
//   - an empty cgroup whose owner was in a pid namespace: when a namespace's
//     init dies the kernel kills the whole namespace, so its cgroups empty
//     out; a live supervisor's cgroup is empty only between its mkdir and
//     its first process, a moment.
//
// A live owner's cgroups stay: a second supervisor started on the same
// configuration by mistake must not kill the first one's programs. Then it
// waits (leftoverWait at most) until every process it killed has been
// reaped, for a new program to find no trace of the old one. Removing a
// cgroup is bounded by the cgroups package's kill timeout.
func (r *Runtime) sweepStale() {
	if r.cg == nil {
		return
	}
	names, err := r.cg.children()
	if err != nil {
		r.log.Warn("listing cgroups to sweep", "err", err)
		return
	}
	mine := ownerTag()
	inInitialNS := !strings.Contains(mine, "n")
	var killed []int
	for _, name := range names {
		o, ok := ownerOf(name)
		if !ok || o.tag == mine {
			continue
		}
		cg, err := r.cg.existing(name)
		if err != nil {
			continue
		}
		procs, _ := cg.procs()
		switch {
		case o.otherNS:
			if len(procs) > 0 {
				continue // its namespace may live: not ours to judge
			}
			// Empty as we see it, which from a pid namespace of our own
			// may only mean that its processes are invisible to us: the
			// kernel, which sees them, refuses to remove it then.
			removed, err := cg.removeEmpty()
			switch {
			case err != nil:
				r.log.Warn("removing the cgroup of a dead supervisor", "cgroup", cg.path(), "err", err)
			case removed:
				r.swept = append(r.swept, Swept{Program: o.sandbox, Cgroup: cg.path(), Owner: o.tag})
				r.log.Warn("removed the cgroup of a dead supervisor", "program", o.sandbox, "cgroup", cg.path(), "owner", o.tag, "killed", 0)
			}
			continue
		case !inInitialNS:
			continue // an owner in the initial namespace: we cannot see it
		case ownerLives(o):
			continue
		}
		if err := cg.remove(); err != nil {
			r.log.Warn("removing the cgroup of a dead supervisor", "cgroup", cg.path(), "err", err)
			continue
		}
		killed = append(killed, procs...)
		r.swept = append(r.swept, Swept{Program: o.sandbox, Cgroup: cg.path(), Owner: o.tag, Killed: len(procs)})
		r.log.Warn("removed the cgroup of a dead supervisor", "program", o.sandbox, "cgroup", cg.path(), "owner", o.tag, "killed", len(procs))
	}
	if left := waitReaped(killed, leftoverWait); len(left) > 0 {
		r.log.Warn("killed leftovers of a dead supervisor are not reaped yet; starting anyway", "pids", left, "waited", leftoverWait)
	}
}

// waitReaped waits until none of pids exists any more (exited and reaped
// by its parent), or until timeout; it returns those still there.
func waitReaped(pids []int, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		left := pids[:0:0]
		for _, pid := range pids {
			if unix.Kill(pid, 0) != unix.ESRCH {
				left = append(left, pid)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		pids = left
		time.Sleep(10 * time.Millisecond)
	}
}
