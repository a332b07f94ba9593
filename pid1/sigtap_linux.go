package pid1

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The init takes its signals through a tap of its own rather than
// os/signal, for two reasons.
//
// Start-up: os/signal enables each signal with a round trip to a runtime
// thread of its own (runtime.ensureSigM), and an init takes every
// catchable signal: ~60 round trips, which on a 2-CPU VM took longer than
// all the rest of the init's start (bench/pid1's Go floor cases measure
// it). The tap is one rt_sigaction(2) per signal.
//
// Telling senders apart: the Go runtime keeps SIGPIPE, SIGURG and SIGPROF
// to itself and mixes the ones it causes (a write to a closed pipe, the
// scheduler's preemption tgkill, profiling) with those another process
// sent; only the siginfo (si_code, si_pid) tells them apart, and os/signal
// drops it. An init must forward what it was sent and nothing it caused.
//
// The tap is a small handler in assembly (sigtap_linux_amd64.s) in place
// of the runtime's: it writes each siginfo to a pipe (one write system
// call, no Go runtime) and returns, or, for a signal this process caused
// itself, goes on to the runtime's handler. The init's goroutine, while
// it waits for nothing else, or else a goroutine of the tap's, reads the
// pipe and passes the signals on in the order they came.
//
// Latency: once the command runs, the trampoline also forwards what the
// init only passes on with one kill(2) of its own, before the write (see
// the .s file); the Go side then only keeps count. Through the pipe, the
// reader and the init's goroutine, a signal took two thread wake-ups more
// than tini's sigtimedwait loop before it reached kill(2). Faults (SIGSEGV from a nil
// dereference and the like) still reach the runtime's handler, so panics
// work as before; sent by another process they are just signals.
//
// Without the trampoline (other architectures) os/signal takes the
// signals, and SIGPIPE, SIGURG and SIGPROF sent by others are not
// forwarded.

// Per-signal behaviour of the trampoline.
const (
	tapOff      = 0 // not tapped
	tapOwn      = 1 // every delivery goes to the pipe
	tapFiltered = 2 // what another process sent goes to the pipe; the rest to tapNext
)

// Read by the trampoline; written while the signal is not tapped.
var (
	tapFD         int32          = -1 // the pipe's write end (non-blocking: a full pipe drops)
	tapPid        int32               // our pid: a sender other than us is another process
	tapMode       [65]uint8           // tapOff, tapOwn or tapFiltered
	tapNext       [65]uintptr         // the handler a filtered signal had
	tapSelfCaused int64               // filtered deliveries this process caused (atomic)
	tapChild      int32               // set by every SIGCHLD before its record is written (atomic)
	tapPrev       [65]sigaction_      // what each tapped signal had before, restored on release
)

// Forwarding from the trampoline (see sigtap_linux_amd64.s): the Run that
// holds the tap sets the tables, then arms it with the command's pid
// (tapSetTarget) once the command runs. Written by Go only while tapTarget
// is 0, or atomically.
var (
	tapFwd     [65]uint8 // the signal each received one is forwarded as (a rewrite's); 0: the Go side decides
	tapStopSig [65]uint8 // 1: a stop request (isStopRequest)
	tapTarget  int32     // kill(2)'s pid: the command, minus its process group; 0: disarmed
	tapBusy    int32     // handlers between reading tapTarget and the return of their kill(2) (atomic)
	tapStopped int32     // set by a stop request the trampoline forwarded (atomic)
	// 1: write the record of every forwarded signal, not only of those
	// kill(2) failed to send (for a log that names each).
	tapRecordForwarded int32
)

// Where the trampoline marks a record it forwarded, in the siginfo's tail
// that no signal uses. A sender cannot fill it: the kernel keeps the
// first 48 bytes of a siginfo and clears the rest when it delivers one
// (rt_sigqueueinfo(2) included; tried).
const (
	tapMarkForwarded = 120 // int32: 1 when forwarded
	tapMarkErrno     = 124 // int32: kill(2)'s return, 0 or -errno
)

const (
	siginfoSize = 128
	saSiginfo   = 0x4        // SA_SIGINFO
	saRestorer  = 0x04000000 // SA_RESTORER
)

// tapSignal is a signal that came through the tap; for SIGPIPE, SIGURG
// and SIGPROF that means another process sent it. forwarded says the
// trampoline passed it on already, err is what its kill(2) returned.
type tapSignal struct {
	sig       syscall.Signal
	forwarded bool
	err       syscall.Errno
}

func (s tapSignal) Signal()        {}
func (s tapSignal) String() string { return s.sig.String() }

// received unwraps what came on a signal channel: the tap's or os/signal's.
func received(s os.Signal) (sig syscall.Signal, tapped bool) {
	if t, ok := s.(tapSignal); ok {
		return t.sig, true
	}
	sig, _ = s.(syscall.Signal)
	return sig, false
}

// forwardedByTap reports whether the trampoline already forwarded s, and
// how its kill(2) went.
func forwardedByTap(s os.Signal) (done bool, err error) {
	t, ok := s.(tapSignal)
	if !ok || !t.forwarded {
		return false, nil
	}
	if t.err != 0 {
		return true, t.err
	}
	return true, nil
}

// tapSetForwarding fills the trampoline's tables: fwd says what each
// signal is forwarded as (0: not by the trampoline); recordAll asks for
// the record of every forwarded signal, not only of failed ones. Only the
// holder of the tap may call it, while disarmed.
func tapSetForwarding(fwd func(syscall.Signal) syscall.Signal, recordAll bool) {
	atomic.StoreInt32(&tapRecordForwarded, 0)
	if recordAll {
		atomic.StoreInt32(&tapRecordForwarded, 1)
	}
	for sig := syscall.Signal(1); sig < syscall.Signal(len(tapFwd)); sig++ {
		to := fwd(sig)
		if to < 0 || to >= syscall.Signal(len(tapFwd)) {
			to = 0
		}
		tapFwd[sig] = uint8(to)
		tapStopSig[sig] = 0
		if to != 0 && isStopRequest(sig) {
			tapStopSig[sig] = 1
		}
	}
	atomic.StoreInt32(&tapStopped, 0)
}

// tapSetTarget arms the trampoline to forward to pid (kill(2)'s argument:
// negative for a process group), or disarms it (0). Disarming returns once
// no handler is still about to signal the old target: after it, the
// caller may reap that process.
func tapSetTarget(pid int) {
	atomic.StoreInt32(&tapTarget, int32(pid))
	if pid != 0 {
		return
	}
	for atomic.LoadInt32(&tapBusy) != 0 {
		runtime.Gosched() // a handler on another thread, one system call from done
	}
}

// tapStopRequested reports whether the trampoline forwarded a stop request
// since tapSetForwarding.
func tapStopRequested() bool { return atomic.LoadInt32(&tapStopped) != 0 }

// tapKind says how the trampoline treats sig. The runtime needs what it
// causes itself of these: SIGPIPE (our writes to a closed pipe), SIGURG
// (preemption), SIGPROF (profiling) and the faults (panics, crashes).
func tapKind(sig syscall.Signal) uint8 {
	switch sig {
	case unix.SIGPIPE, unix.SIGURG, unix.SIGPROF,
		unix.SIGILL, unix.SIGTRAP, unix.SIGABRT, unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGSYS:
		return tapFiltered
	}
	return tapOwn
}

// The pipe and its reader live as long as the process, like os/signal's
// loop; one Run at a time has the signals delivered (tap.out).
var tap struct {
	once sync.Once
	err  error
	mu   sync.Mutex
	out  chan<- os.Signal // guarded by mu; nil: nobody listens, dropped
	chld chan<- os.Signal // guarded by mu; SIGCHLD, coalesced

	// The pipe's read end, and the state of whoever reads it
	// (readTapOnce): the tap's holder, until the reader goroutine starts.
	// r wraps rfd from the first read on (see readTapOnce).
	rfd        int
	r          *os.File
	buf, carry []byte
	reader     sync.Once
	started    atomic.Bool
}

// catchSignals delivers sigs to out until release is called: through the
// tap where it can be installed, through os/signal otherwise. Neither
// blocks on out: what does not fit is dropped. SIGCHLD, when in sigs, goes
// to chld instead, which should hold one: a SIGCHLD is never dropped, only
// coalesced with one not yet taken, so that a flood of other signals can
// never hide an exit (the reaper would wait for the next one).
//
// tapped says the tap took them: the caller then holds the trampoline's
// forwarding (tapSetForwarding, tapSetTarget).
//
// With inline, the caller reads the tap itself (tapReadInline) until it
// calls tapStartReader; otherwise a goroutine delivers.
func catchSignals(out, chld chan<- os.Signal, sigs []syscall.Signal, inline bool, log *slog.Logger) (release func(), tapped bool) {
	release, err := takeTap(out, chld, sigs)
	if err == nil {
		if !inline {
			tapStartReader()
		}
		return release, true
	}
	log.Debug("signals through os/signal: SIGPIPE, SIGURG and SIGPROF sent to the init are not forwarded", "err", err)
	var notify []os.Signal
	for _, s := range sigs {
		switch s {
		case unix.SIGURG: // the scheduler's, all the time
		case unix.SIGCHLD:
			if chld != nil {
				signal.Notify(chld, s)
			}
		default:
			notify = append(notify, s)
		}
	}
	signal.Notify(out, notify...)
	return func() {
		signal.Stop(out)
		if chld != nil {
			signal.Stop(chld)
		}
	}, false
}

// sigaction_ is struct sigaction of rt_sigaction(2) on Linux.
type sigaction_ struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

func rtSigaction(sig syscall.Signal, act, old *sigaction_) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// goHandler reports whether a is the Go runtime's handler (a function
// taking a siginfo), which a filtered signal's own deliveries go on to.
func goHandler(a *sigaction_) bool { return a.handler > 1 && a.flags&saSiginfo != 0 }

// tapSignals installs the trampoline for sigs and returns what restores
// their handlers; a goroutine delivers to out and chld.
func tapSignals(out, chld chan<- os.Signal, sigs []syscall.Signal) (release func(), err error) {
	release, err = takeTap(out, chld, sigs)
	if err == nil {
		tapStartReader()
	}
	return release, err
}

// takeTap installs the trampoline for sigs and returns what restores
// their handlers. Nothing reads the pipe yet.
func takeTap(out, chld chan<- os.Signal, sigs []syscall.Signal) (release func(), err error) {
	if !tapSupported {
		return nil, errors.New("no signal tap on this architecture")
	}
	tap.once.Do(func() { tap.err = openTap() })
	if tap.err != nil {
		return nil, tap.err
	}
	// The runtime installs its handler for SIGUSR1 at start: its flags,
	// mask and restorer (the return through rt_sigreturn) are what every
	// tapped signal gets, with the trampoline as handler.
	var tmpl sigaction_
	if err := rtSigaction(unix.SIGUSR1, nil, &tmpl); err != nil {
		return nil, fmt.Errorf("signal tap: reading the SIGUSR1 handler: %w", err)
	}
	if !goHandler(&tmpl) || tmpl.flags&saRestorer == 0 {
		return nil, errors.New("signal tap: the Go runtime's handler is not in place")
	}
	tap.mu.Lock()
	defer tap.mu.Unlock()
	if tap.out != nil {
		return nil, errors.New("signal tap: already taken")
	}
	atomic.StoreInt32(&tapPid, int32(os.Getpid()))
	done := make([]syscall.Signal, 0, len(sigs))
	undo := func() {
		for _, sig := range done {
			if sig == unix.SIGPIPE {
				continue // see below
			}
			_ = rtSigaction(sig, &tapPrev[sig], nil)
			tapMode[sig] = tapOff
		}
	}
	for _, sig := range sigs {
		if sig == unix.SIGPIPE {
			// A write of ours to a closed stdout makes the runtime end the
			// process unless os/signal wants or ignores SIGPIPE. Ignoring
			// is a flag and SIG_IGN (no round trip), and from then on the
			// runtime's handler would kill us for SIGPIPE: what we cause
			// is dropped (tapNext is SIG_IGN) and the tap stays for good,
			// so that no command inherits the SIG_IGN.
			signal.Ignore(unix.SIGPIPE)
		}
		// One rt_sigaction that installs and returns the old handler (an
		// init's start pays ~60 of them). Until the old one is read back,
		// what this process causes of a filtered signal goes where the
		// runtime's would: its one handler for every signal (tmpl's), or
		// SIG_IGN for SIGPIPE (see above).
		mode := tapKind(sig)
		next := tmpl.handler
		if sig == unix.SIGPIPE {
			next = 1 // SIG_IGN
		}
		if tapMode[sig] == tapOff {
			tapNext[sig] = next
		}
		tapMode[sig] = mode
		act := tmpl
		act.handler = tapTrampolineAddr()
		var old sigaction_
		if err := rtSigaction(sig, &act, &old); err != nil {
			tapMode[sig] = tapOff
			undo()
			return nil, fmt.Errorf("signal tap: installing for %v: %w", sig, err)
		}
		if old.handler == tapTrampolineAddr() {
			// Still ours (SIGPIPE stays): jumping to it would loop.
			old = tapPrev[sig]
		}
		if mode == tapFiltered && !goHandler(&old) && sig != unix.SIGPIPE {
			// What we cause ourselves must reach the runtime.
			_ = rtSigaction(sig, &old, nil)
			tapMode[sig] = tapOff
			undo()
			return nil, fmt.Errorf("signal tap: %v has no Go runtime handler", sig)
		}
		tapPrev[sig], tapNext[sig] = old, old.handler
		done = append(done, sig)
	}
	tap.out, tap.chld = out, chld
	return func() {
		tap.mu.Lock()
		defer tap.mu.Unlock()
		undo()
		tap.out, tap.chld = nil, nil
	}, nil
}

func openTap() error {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return fmt.Errorf("signal tap: pipe: %w", err)
	}
	tapFD, tap.rfd = int32(p[1]), p[0]
	return nil
}

// tapStartReader hands the reading of the pipe to a goroutine of its own
// for good (readTap). Until then the tap's holder reads it itself, with
// tapReadInline.
func tapStartReader() {
	tap.reader.Do(func() {
		tap.started.Store(true)
		go readTap()
	})
}

// tapReadInline waits for what the trampoline writes and passes it on, as
// readTap does, on the caller's goroutine: an init waiting for nothing but
// signals then sleeps in the poller itself, and one wake-up, not two (the
// reader's, then the init's), takes it from a SIGCHLD to wait4(2). false:
// the reader goroutine reads the pipe, or it failed.
func tapReadInline() bool {
	if tap.started.Load() {
		return false
	}
	return readTapOnce() == nil
}

// readTap passes on what the trampoline wrote.
func readTap() {
	for readTapOnce() == nil {
	}
}

// readTapOnce reads what is in the pipe (waiting for something) and passes
// it on. One goroutine at a time: the holder's until tapStartReader, then
// readTap's.
func readTapOnce() error {
	if tap.r == nil {
		// Not with the pipe: an *os.File of a non-blocking descriptor
		// starts the runtime's poller (an epoll instance, an eventfd),
		// and an init's first read comes after it started the command,
		// so that this runs while the command does, not before it.
		tap.r = os.NewFile(uintptr(tap.rfd), "signal tap")
		tap.buf = make([]byte, 32*siginfoSize)
	}
	n, err := tap.r.Read(tap.buf)
	if err != nil {
		return err
	}
	// Parsed in place unless a partial record is carried over (a read
	// takes whole writes, so it never is): the record of the command's
	// exit is read between that exit and our own, with nothing allocated.
	data := tap.buf[:n]
	if len(tap.carry) > 0 {
		data = append(tap.carry, data...)
	}
	tap.mu.Lock()
	defer tap.mu.Unlock()
	for ; len(data) >= siginfoSize; data = data[siginfoSize:] {
		signo := binary.NativeEndian.Uint32(data[0:])
		if tap.out == nil || signo == uint32(unix.SIGCHLD) { // see tapChild below
			continue
		}
		ts := tapSignal{sig: syscall.Signal(signo)}
		if binary.NativeEndian.Uint32(data[tapMarkForwarded:]) == 1 {
			ts.forwarded = true
			ts.err = syscall.Errno(-int32(binary.NativeEndian.Uint32(data[tapMarkErrno:])))
		}
		select {
		case tap.out <- ts:
		default:
		}
	}
	// After the read: a SIGCHLD whose record did not fit set the flag
	// before the pipe we just read from was full.
	if atomic.SwapInt32(&tapChild, 0) != 0 && tap.chld != nil {
		select {
		case tap.chld <- tapSignal{sig: unix.SIGCHLD}:
		default: // one is pending: the same to a reaper
		}
	}
	tap.carry = append(tap.carry[:0], data...)
	return nil
}
