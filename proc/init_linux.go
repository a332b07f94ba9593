package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/supervise-dev/supervise/internal/execpath"
	"github.com/supervise-dev/supervise/internal/unixsig"
	"golang.org/x/sys/unix"
)

// The re-executed binary is recognised by its argv: argv[0] is initArgv0
// (which no one types) and argv[1] the role. An argv marker, unlike an
// environment variable, cannot leak into the programs the init starts.
const (
	initArgv0   = "supervise-init"
	roleSandbox = "sandbox" // long-lived init of a sandbox with namespaces
	roleExec    = "exec"    // apply rlimits/umask/no_new_privs, exec in place
	roleRun     = "run"     // tini: run argv[2:], forward signals, reap, exit like it
	roleSpawner = "spawner" // fork programs for the runtime (spawner_linux.go)
)

// IsInit reports whether this process is the runtime's re-executed stub.
// main must check it before anything else and then exit with InitMain:
//
//	if proc.IsInit() { os.Exit(proc.InitMain()) }
func IsInit() bool {
	if len(os.Args) < 2 || os.Args[0] != initArgv0 {
		return false
	}
	switch os.Args[1] {
	case roleSandbox, roleExec, roleRun, roleSpawner:
		return true
	}
	return false
}

// InitMain runs the stub and returns its exit code. Only call it when
// IsInit is true.
func InitMain() int {
	switch os.Args[1] {
	case roleExec:
		// no_new_privs is per thread: set it and exec from the same one.
		runtime.LockOSThread()
		return shimMain()
	case roleSandbox:
		// What the runtime's process inherited must not reach the
		// programs; the control socket on fd 3 is dup'ed before use.
		if err := CloseOnExecFrom(3); err != nil {
			fmt.Fprintln(os.Stderr, "supervise-init:", err)
			return 1
		}
		return sandboxInitMain()
	case roleSpawner:
		return spawnerMain()
	case roleRun:
		if err := CloseOnExecFrom(3); err != nil {
			fmt.Fprintln(os.Stderr, "supervise-init:", err)
			return 127
		}
		if len(os.Args) < 3 {
			fmt.Fprintln(os.Stderr, "supervise-init run: no command")
			return 127
		}
		ws, err := RunInit(os.Args[2:], os.Environ())
		if err != nil {
			fmt.Fprintln(os.Stderr, "supervise-init:", err)
			return 127
		}
		return ExitLike(ws)
	}
	return 127
}

// forwardedSignals are the catchable signals an init passes on: not
// SIGCHLD, the reaper's, nor SIGPIPE, which concerns only the init.
func forwardedSignals() []os.Signal { return unixsig.Catchable(unix.SIGCHLD, unix.SIGPIPE) }

// RunInit is a tiny init, the loop tini runs: it starts argv in its own
// process group, forwards every catchable signal it receives to that
// group, reaps every child that comes its way (it should be PID 1 or a
// subreaper), and returns argv's wait status once it exited. Without a
// handler a Go PID 1 would die of SIGTERM, so every forwarded signal is
// caught. Remaining children are left to the caller (as PID 1 of a pid
// namespace, exiting kills them all).
func RunInit(argv []string, env []string) (syscall.WaitStatus, error) {
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs, forwardedSignals()...)
	defer signal.Stop(sigs)
	if os.Getpid() != 1 {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	rp := newReaper(nil)
	defer rp.close()

	path, err := execpath.Look(argv[0], env, "")
	if err != nil {
		return 0, err
	}
	exited := make(chan unix.WaitStatus, 1)
	spec := &spawnSpec{Path: path, Args: argv, Env: env, Umask: -1}
	pid, err := rp.spawn(func() (int, error) {
		pid, _, err := forkSpec(spec, 1, 2, nil, &syscall.SysProcAttr{}, syscall.ForkExec)
		return pid, err
	}, func(ws unix.WaitStatus) {
		if ws.Exited() || ws.Signaled() {
			exited <- ws
		}
	})
	if err != nil {
		return 0, err
	}
	for {
		select {
		case ws := <-exited:
			return syscall.WaitStatus(ws), nil
		case s := <-sigs:
			_ = rp.kill(pid, true, s.(syscall.Signal))
		}
	}
}

// ExitLike ends this process the way ws says the child ended: a signal is
// re-raised with its default action, so our parent sees the same signal;
// an exit code is returned for os.Exit. Where the signal cannot kill us
// (PID 1 of a namespace ignores its own signals) it returns 128+signal.
func ExitLike(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		dieFromSignal(ws.Signal())
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// dieFromSignal kills us with sig's default action. signal.Reset is not
// enough: the Go runtime keeps its own handler, which ignores most
// signals. So set SIG_DFL with rt_sigaction and raise it; the core, if
// the signal dumps one, is the child's business, not ours.
func dieFromSignal(sig syscall.Signal) {
	signal.Reset(sig)
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	var act struct { // struct kernel_sigaction; handler 0 is SIG_DFL
		handler  uintptr
		flags    uint64
		restorer uintptr
		mask     uint64
	}
	if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); errno != 0 {
		return
	}
	_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), sig)
	// Delivery to ourselves happens on the way back from the syscall;
	// reaching here means the signal was ignored (PID 1 of a namespace).
}

// sandboxInit is the long-lived PID 1 (or, without a pid namespace, the
// subreaper) of a sandbox: it forks programs and Exec commands on request,
// reports their exits, forwards signals and reaps everything.
type sandboxInit struct {
	conn   *seqConn
	rp     *reaper
	isPID1 bool

	wmu sync.Mutex // serializes writes to conn

	mu       sync.Mutex
	children map[uint64]int // child key → pid; guarded by mu

	exits chan struct{} // capacity 1: a child exited
}

func sandboxInitMain() int {
	conn, err := packetConn(os.NewFile(3, "control"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervise-init: control socket:", err)
		return 1
	}
	in := &sandboxInit{conn: conn, isPID1: os.Getpid() == 1, children: make(map[uint64]int), exits: make(chan struct{}, 1)}
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs, forwardedSignals()...)
	if !in.isPID1 {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	in.rp = newReaper(nil)
	go in.forward(sigs)

	buf, oob := make([]byte, maxMessage), make([]byte, unix.CmsgSpace(8*4))
	// The first message is the setup; until it comes we have not been
	// placed in our cgroup yet, so we do nothing that allocates much.
	m, fds, err := readMsg(conn, buf, oob)
	closeFds(fds)
	if err != nil || m.Op != opSetup || m.Setup == nil {
		return 1
	}
	if err := applySetup(m.Setup); err != nil {
		in.send(&message{Op: opError, Seq: m.Seq, Err: err.Error()})
		return 1
	}
	in.send(&message{Op: opReady, Seq: m.Seq})

	for {
		m, fds, err := readMsg(conn, buf, oob)
		if err != nil {
			// The runtime closed the socket or died: nothing of the
			// sandbox may outlive it. Report the exits while we can.
			in.killAll()
			in.waitChildren(5 * time.Second)
			if !errors.Is(err, io.EOF) {
				fmt.Fprintln(os.Stderr, "supervise-init:", err)
			}
			return 0
		}
		in.handle(m, fds)
	}
}

func applySetup(s *initSetup) error {
	if s.PrivateRoot {
		// Mount events must not propagate back to the host (systemd
		// makes / shared).
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("making / private: %w", err)
		}
	}
	if s.MountProc {
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mounting /proc: %w", err)
		}
	}
	if s.Hostname != "" {
		if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
			return fmt.Errorf("setting hostname: %w", err)
		}
	}
	if s.Loopback {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	return nil
}

func (in *sandboxInit) send(m *message) {
	in.wmu.Lock()
	defer in.wmu.Unlock()
	_ = writeMsg(in.conn, m)
}

func (in *sandboxInit) handle(m message, fds []int) {
	switch m.Op {
	case opStart:
		in.start(m, fds)
		return
	case opSignal:
		closeFds(fds)
		in.mu.Lock()
		pid, ok := in.children[m.Child]
		in.mu.Unlock()
		err := ErrProcessDone
		if ok {
			err = in.rp.kill(pid, true, syscall.Signal(m.Signal))
		}
		in.reply(m.Seq, err)
	case opKillAll:
		closeFds(fds)
		in.killAll()
		in.reply(m.Seq, nil)
	default:
		closeFds(fds)
		in.reply(m.Seq, fmt.Errorf("unknown request %q", m.Op))
	}
}

func (in *sandboxInit) reply(seq uint64, err error) {
	if err != nil {
		in.send(&message{Op: opError, Seq: seq, Err: err.Error()})
		return
	}
	in.send(&message{Op: opOK, Seq: seq})
}

func (in *sandboxInit) start(m message, fds []int) {
	defer closeFds(fds)
	if m.Spec == nil || len(fds) != 2+len(m.Spec.ExtraFDs) {
		in.reply(m.Seq, errors.New("bad start request"))
		return
	}
	child := m.Child
	var finish startedFunc
	pid, err := in.rp.spawn(func() (int, error) {
		pid, fin, err := forkSpec(m.Spec, fds[0], fds[1], fds[2:], &syscall.SysProcAttr{}, syscall.ForkExec)
		if err == nil {
			finish = fin
			in.mu.Lock()
			in.children[child] = pid
			in.mu.Unlock()
		}
		return pid, err
	}, func(ws unix.WaitStatus) {
		if !ws.Exited() && !ws.Signaled() {
			return
		}
		in.mu.Lock()
		delete(in.children, child)
		in.mu.Unlock()
		in.send(&message{Op: opExited, Child: child, Status: uint32(ws)})
		select {
		case in.exits <- struct{}{}:
		default:
		}
	})
	if err == nil {
		err = finish()
	}
	if err != nil {
		in.reply(m.Seq, err)
		return
	}
	in.send(&message{Op: opStarted, Seq: m.Seq, Child: child, Pid: pid})
}

// killAll SIGKILLs every process of the sandbox but us: as PID 1 of the
// pid namespace kill(-1) reaches exactly those; otherwise the process
// groups of our children (the cgroup, if any, is the runtime's to kill).
func (in *sandboxInit) killAll() {
	if in.isPID1 {
		_ = unix.Kill(-1, unix.SIGKILL)
		return
	}
	in.mu.Lock()
	pids := make([]int, 0, len(in.children))
	for _, pid := range in.children {
		pids = append(pids, pid)
	}
	in.mu.Unlock()
	for _, pid := range pids {
		_ = in.rp.kill(pid, true, unix.SIGKILL)
	}
}

// waitChildren waits until every child has been reaped, at most d.
func (in *sandboxInit) waitChildren(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		in.mu.Lock()
		n := len(in.children)
		in.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-in.exits:
		case <-t.C:
			return
		}
	}
}

// forward passes signals sent to the init on to every program's group.
func (in *sandboxInit) forward(sigs <-chan os.Signal) {
	for s := range sigs {
		in.mu.Lock()
		pids := make([]int, 0, len(in.children))
		for _, pid := range in.children {
			pids = append(pids, pid)
		}
		in.mu.Unlock()
		for _, pid := range pids {
			_ = in.rp.kill(pid, true, s.(syscall.Signal))
		}
	}
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
