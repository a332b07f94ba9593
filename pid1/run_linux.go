package pid1

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/supervise-dev/supervise/internal/reap"
	"github.com/supervise-dev/supervise/internal/unixsig"
	"golang.org/x/sys/unix"
)

// killWait bounds the wait for leftovers after SIGKILL: only a process in
// uninterruptible sleep outlives it, and an init must not hang on one.
const killWait = 10 * time.Second

// Run runs cfg.Args as an init (see the package doc) and returns the code
// to exit with. It blocks until the command has exited for good and
// everything it left behind is gone. A non-nil error is a one-line message
// for the user (the command could not be started, the sandbox could not be
// made); the code is still the one to exit with. Cancelling ctx is a stop
// request: the command gets cfg.StopSignal and is not restarted.
//
// Run handles every catchable signal of the process while it runs (and,
// with cfg.Dedicated, after it returns) and owns every wait4: nothing else
// in the process may wait for children, and only one Run may be under way
// at a time.
func Run(ctx context.Context, cfg Config) (int, error) {
	if err := cfg.validate(); err != nil {
		return 2, err
	}
	cfg = cfg.withDefaults()
	if cfg.Sandbox != nil {
		return runSandboxed(ctx, &cfg)
	}
	trace.mark("run")
	d := newDirect(&cfg)
	trace.mark("signals")
	defer d.close()
	code, err := loop(ctx, &cfg, d)
	trace.mark("done")
	d.log.Info("exiting", "exit_code", code, "orphans_reaped", d.orphans)
	return code, err
}

// direct runs the command as our own child. Everything but newDirect and
// close runs on the goroutine that called Run: it alone forks, waits and
// signals, so no lock is needed and no exit can be collected before its
// pid is known.
type direct struct {
	cfg     *Config
	log     *slog.Logger
	isPID1  bool
	tty     ttyMode
	sigs    chan os.Signal
	chld    chan os.Signal // SIGCHLD, coalesced: never dropped
	uncatch func()         // gives the signals back (catchSignals)
	tapped  bool           // the tap took the signals: its trampoline forwards them too
	inline  bool           // we read the tap ourselves (tapReadInline) while we wait for signals alone

	unsetSubreaper bool

	pid      int             // the running command; 0 once reaped
	pgid     int             // its process group; 0 between runs
	ws       unix.WaitStatus // the command's status, once reaped
	exitedAt time.Time
	stop     bool // a stop was requested
	orphans  int  // orphans reaped so far
}

func newDirect(cfg *Config) *direct {
	d := &direct{cfg: cfg, log: cfg.Logger, isPID1: os.Getpid() == 1}
	// Before the signals are caught: handing a terminal over makes the
	// kernel send us a SIGHUP that must not reach the command.
	d.tty = takeTTY(cfg.Stdin, d.log)
	// Buffered: what does not fit is dropped, which only a flood does.
	// SIGCHLD has a channel of its own, never dropped (catchSignals).
	d.sigs, d.chld = make(chan os.Signal, 128), make(chan os.Signal, 1)
	d.uncatch, d.tapped = catchSignals(d.sigs, d.chld, handledSignals(), true, d.log)
	d.inline = d.tapped
	if d.tapped {
		// What handle would forward, the trampoline does while the
		// command runs (armed in runOnce). Its records come only to be
		// logged, or when kill failed.
		tapSetForwarding(func(sig syscall.Signal) syscall.Signal {
			if !forwardable(sig, true) {
				return 0
			}
			return cfg.rewrite(sig)
		}, d.log.Enabled(context.Background(), slog.LevelDebug))
	}
	if !d.isPID1 {
		var was int32
		_ = unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&was)), 0, 0, 0)
		if was == 0 {
			if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
				d.log.Warn("cannot become a child subreaper: orphans go to the system's init", "err", err)
			} else {
				d.unsetSubreaper = true
			}
		}
	}
	return d
}

// close gives back what newDirect took: the signals, the subreaper flag,
// and (run from a shell) the terminal's foreground. A Dedicated init only
// gives the terminal back: the process exits next.
func (d *direct) close() {
	if d.tapped {
		tapSetTarget(0)
	}
	if d.tty == ttyForeground {
		giveForegroundBack(d.cfg.Stdin)
	}
	if d.cfg.Dedicated {
		return
	}
	d.uncatch()
	if d.unsetSubreaper {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	}
}

// handledSignals are the signals the init takes: every catchable one
// (SIGCHLD wakes the reaper), SIGURG included (catchSignals tells the
// scheduler's own from one another process sent).
func handledSignals(except ...syscall.Signal) []syscall.Signal {
	return append(unixsig.CatchableNums(except...), unix.SIGURG)
}

// forwardable: SIGTTIN and SIGTTOU are about our own use of the
// terminal; the command has nothing to do with them (and obeying them
// would stop the init). SIGPIPE, SIGURG and SIGPROF only when the tap saw
// another process send them: os/signal mixes in the ones we caused.
func forwardable(sig syscall.Signal, tapped bool) bool {
	switch sig {
	case unix.SIGCHLD, unix.SIGTTIN, unix.SIGTTOU:
		return false
	case unix.SIGPIPE, unix.SIGURG, unix.SIGPROF:
		return tapped
	}
	return true
}

func (d *direct) stopRequested() bool { return d.stop || d.tapped && tapStopRequested() }

// target is the pid signals go to (kill(2)'s argument), 0 for none: the
// command's group, or with SingleChild the command while it is not
// reaped. forward and the tap's trampoline use it alike.
func (d *direct) target() int {
	switch {
	case d.cfg.SingleChild:
		return d.pid
	case d.pgid != 0:
		return -d.pgid
	}
	return 0
}

// arm points the trampoline at target(); with the tap it forwards from
// then on, before the Go side hears of a signal.
func (d *direct) arm() {
	if d.tapped {
		tapSetTarget(d.target())
	}
}

func (d *direct) runOnce(ctx context.Context) (exit, error) {
	path, err := d.commandPath()
	if err != nil {
		return exit{}, err
	}
	pid, err := d.spawn(path)
	if err != nil {
		return exit{}, err
	}
	d.pid, d.pgid, d.ws = pid, pid, 0
	d.arm()
	trace.mark("spawned")
	d.log.Debug("started", "pid", pid, "tty", d.tty.String())
	done := ctx.Done()
	for d.pid != 0 {
		if d.inline && done == nil {
			select {
			case <-d.chld:
				d.reap()
			case s := <-d.sigs:
				d.handle(s)
			default:
				d.inline = tapReadInline()
			}
			continue
		}
		d.readerTakesOver()
		select {
		case <-d.chld:
			d.reap()
		case s := <-d.sigs:
			d.handle(s)
		case <-done:
			done = nil
			d.stop = true
			d.forward(d.cfg.StopSignal)
		}
	}
	ex := exit{code: ExitCode(syscall.WaitStatus(d.ws), d.cfg.SuccessExitCodes), at: d.exitedAt}
	if d.ws.Signaled() {
		d.log.Debug("command killed", "pid", pid, "signal", unixsig.Name(d.ws.Signal()), "exit_code", ex.code)
	} else {
		d.log.Debug("command exited", "pid", pid, "exit_code", ex.code)
	}
	if d.cfg.SingleChild {
		// As dumb-init's --single-child: the rest of the group is left
		// alone (as PID 1, the kernel ends it with the namespace).
		d.reap()
	} else {
		d.cleanup()
	}
	d.pgid = 0
	d.arm()
	return ex, nil
}

// readerTakesOver hands the reading of the tap to its goroutine, for good:
// from now on we wait for more than signals (ctx, a timer).
func (d *direct) readerTakesOver() {
	if d.tapped {
		d.inline = false
		tapStartReader()
	}
}

// handle answers one received signal while a command runs (or its
// leftovers do).
func (d *direct) handle(s os.Signal) {
	sig, tapped := received(s)
	if !forwardable(sig, tapped) {
		d.log.Debug("signal not forwarded", "signal", unixsig.Name(sig))
		return
	}
	if isStopRequest(sig) {
		d.stop = true
	}
	fwd := d.cfg.rewrite(sig)
	if done, err := forwardedByTap(s); done {
		d.forwarded(fwd, err)
		return
	}
	if fwd == 0 {
		d.log.Debug("signal dropped by a rewrite", "signal", unixsig.Name(sig))
		return
	}
	d.forward(fwd)
}

// forward sends sig to the command's process group, or to the command
// alone with SingleChild. After the command exited, its group (what is
// left of it) still gets signals until it is empty.
func (d *direct) forward(sig syscall.Signal) {
	// With SingleChild, d.pid is not reaped yet (we are the only waiter
	// and we have not seen its exit), so it cannot have been reused.
	t := d.target()
	if t == 0 {
		d.log.Debug("no command running; signal dropped", "signal", unixsig.Name(sig))
		return
	}
	d.forwarded(sig, unix.Kill(t, sig))
}

// forwarded logs how forwarding sig went, here or in the trampoline.
func (d *direct) forwarded(sig syscall.Signal, err error) {
	if err != nil && !errors.Is(err, unix.ESRCH) {
		d.log.Warn("forwarding a signal", "signal", unixsig.Name(sig), "err", err)
		return
	}
	d.log.Debug("signal forwarded", "signal", unixsig.Name(sig))
}

// reap collects every child that exited: the command (its status is
// kept) and orphans re-parented to us. SIGCHLD coalesces, so one signal
// may stand for many exits. It reports whether any child is left.
func (d *direct) reap() (childrenLeft bool) {
	if d.cfg.SingleChild && d.pid != 0 && d.tapped {
		// The trampoline signals the command by its pid: it must be done
		// with it before the pid can be reaped (and reused).
		tapSetTarget(0)
		defer d.arm()
	}
	return reap.Changed(func(pid int, ws unix.WaitStatus) {
		switch {
		case !reap.Ended(ws):
		case pid == d.pid:
			d.ws, d.pid, d.exitedAt = ws, 0, d.cfg.Backoff.Clock.Now()
		default:
			d.orphans++
		}
	})
}

// cleanup disposes of what the exited command left behind: the stop
// signal (and SIGCONT, so a stopped process can act on it) to its process
// group and every other descendant, then SIGKILL after the grace. It
// returns as soon as we have no child left: our descendants are our
// children or theirs, so the last of them to go makes wait4 say ECHILD,
// right after its SIGCHLD. No fixed sleep.
func (d *direct) cleanup() {
	if !d.reap() {
		return
	}
	d.readerTakesOver()
	killed := d.cfg.Grace == 0
	if killed {
		d.killLeftovers(unix.SIGKILL)
	} else {
		n := d.killLeftovers(d.cfg.StopSignal)
		if d.cfg.StopSignal != unix.SIGCONT {
			d.killLeftovers(unix.SIGCONT)
		}
		d.log.Debug("stopping what the command left", "processes", n, "signal", unixsig.Name(d.cfg.StopSignal), "grace", d.cfg.Grace)
	}
	grace := time.NewTimer(d.cfg.Grace)
	defer grace.Stop()
	var hard <-chan time.Time
	for {
		select {
		case s := <-d.sigs:
			d.handle(s)
		case <-d.chld:
			if !d.reap() {
				return
			}
			if killed {
				// Something forked while we were killing: kill again.
				d.killLeftovers(unix.SIGKILL)
			}
		case <-grace.C:
			if killed {
				continue
			}
			killed = true
			n := d.killLeftovers(unix.SIGKILL)
			d.log.Warn("grace period over: killed what the command left", "processes", n, "grace", d.cfg.Grace)
			hard = time.After(killWait)
		case <-hard:
			pids, _ := descendants()
			d.log.Error("processes outlive SIGKILL (uninterruptible sleep?); giving up on them", "pids", pids)
			return
		}
	}
}

// killLeftovers sends sig to the command's process group and to every
// other descendant of ours, and returns how many descendants it saw.
// Reading the tree races with forks; the callers kill again on every
// SIGCHLD after SIGKILL, so a process forked meanwhile is caught.
func (d *direct) killLeftovers(sig syscall.Signal) int {
	if d.pgid != 0 {
		_ = unix.Kill(-d.pgid, sig)
	}
	pids, err := descendants()
	if err != nil {
		if d.isPID1 {
			// No /proc to read: as PID 1, kill(-1) reaches exactly the
			// other processes of our pid namespace.
			_ = unix.Kill(-1, sig)
		} else {
			d.log.Warn("listing descendants: only the command's process group was signalled", "err", err)
		}
		return len(pids)
	}
	for _, pid := range pids {
		if pg, err := unix.Getpgid(pid); err == nil && pg == d.pgid && d.pgid != 0 {
			continue // the group kill reached it
		}
		_ = unix.Kill(pid, sig)
	}
	return len(pids)
}

// waitRestart waits out a crash backoff with no command running.
func (d *direct) waitRestart(ctx context.Context, c <-chan time.Time) bool {
	d.readerTakesOver()
	for {
		select {
		case <-c:
			return true
		case <-ctx.Done():
			d.stop = true
			return false
		case <-d.chld:
			d.reap()
		case s := <-d.sigs:
			switch sig, _ := received(s); {
			case isStopRequest(sig):
				d.stop = true
				d.log.Debug("stop requested during the crash backoff", "signal", unixsig.Name(sig))
				return false
			default:
				d.log.Debug("no command running; signal dropped", "signal", unixsig.Name(sig))
			}
		}
	}
}
