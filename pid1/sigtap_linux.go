package pid1

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Go runtime keeps three signals to itself. SIGPROF never reaches
// os/signal (profiling takes it); SIGURG does, mixed with the scheduler's
// own preemption signals (tgkill to its threads); SIGPIPE does, mixed with
// the kernel's for our own writes to a closed pipe. An init must forward
// what another process sent it and nothing it caused itself, and only the
// siginfo tells them apart (si_code, si_pid), which os/signal drops. So
// the tap puts a small handler (assembly, one write system call) in front
// of the runtime's for these three: it writes each siginfo to a pipe and
// jumps to the runtime's handler, which goes on as before (preemption,
// profiling and EPIPE work unchanged). A goroutine reads the pipe and
// passes on, as tapSignal, what another process sent.

var tappedSignals = []syscall.Signal{unix.SIGPIPE, unix.SIGURG, unix.SIGPROF}

// Read by the trampoline, written once before it is installed.
var (
	tapFD   int32       = -1 // the pipe's write end (non-blocking: a full pipe drops)
	tapNext [65]uintptr      // the handler each tapped signal had
)

// tapOwn counts the tapped signals this process caused itself (dropped).
var tapOwn atomic.Int64

const (
	siginfoSize = 128
	saSiginfo   = 4 // SA_SIGINFO
)

// tapSignal is a tapped signal that another process sent us.
type tapSignal syscall.Signal

func (s tapSignal) Signal()        {}
func (s tapSignal) String() string { return syscall.Signal(s).String() }

// received unwraps what came on a signal channel: os/signal's or the tap's.
func received(s os.Signal) (sig syscall.Signal, tapped bool) {
	if t, ok := s.(tapSignal); ok {
		return syscall.Signal(t), true
	}
	sig, _ = s.(syscall.Signal)
	return sig, false
}

// The tap is process-wide and, like os/signal's handlers, stays installed
// once it is; one Run at a time takes what it sees.
var tap struct {
	once sync.Once
	err  error
	mu   sync.Mutex
	out  chan<- os.Signal // guarded by mu; nil: nobody listens, dropped
}

// subscribeTap installs the tap on first use and sends what it sees to out
// (never blocking: a full channel drops, as os/signal does) until the
// returned function is called.
func subscribeTap(out chan<- os.Signal) (unsubscribe func(), err error) {
	tap.once.Do(func() { tap.err = installTap() })
	if tap.err != nil {
		return func() {}, tap.err
	}
	tap.mu.Lock()
	tap.out = out
	tap.mu.Unlock()
	return func() {
		tap.mu.Lock()
		if tap.out == out {
			tap.out = nil
		}
		tap.mu.Unlock()
	}, nil
}

// kernelSigaction is struct sigaction of rt_sigaction(2) on Linux.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

func rtSigaction(sig syscall.Signal, act, old *kernelSigaction) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func installTap() error {
	if !tapSupported {
		return errors.New("no signal tap on this architecture")
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return fmt.Errorf("signal tap: pipe: %w", err)
	}
	r := os.NewFile(uintptr(p[0]), "signal tap")
	tapFD = int32(p[1])
	installed := 0
	for _, sig := range tappedSignals {
		var old kernelSigaction
		if err := rtSigaction(sig, nil, &old); err != nil {
			return fmt.Errorf("signal tap: reading the %v handler: %w", sig, err)
		}
		// Only in front of a real handler taking a siginfo: the Go
		// runtime's. SIG_DFL and SIG_IGN cannot be jumped to.
		if old.handler <= 1 || old.flags&saSiginfo == 0 {
			continue
		}
		tapNext[sig] = old.handler
		act := old
		act.handler = tapTrampolineAddr()
		if err := rtSigaction(sig, &act, nil); err != nil {
			return fmt.Errorf("signal tap: installing for %v: %w", sig, err)
		}
		installed++
	}
	// Owned by the process, like os/signal's loop: it lives as long as
	// the handlers that write to its pipe.
	go readTap(r, int32(os.Getpid()))
	if installed < len(tappedSignals) {
		return errors.New("signal tap: not every signal has the Go runtime's handler")
	}
	return nil
}

// readTap passes on the signals another process sent.
func readTap(r *os.File, self int32) {
	buf := make([]byte, 32*siginfoSize)
	var carry []byte
	for {
		n, err := r.Read(buf)
		if err != nil {
			return
		}
		data := append(carry, buf[:n]...)
		for len(data) >= siginfoSize {
			info := data[:siginfoSize]
			data = data[siginfoSize:]
			signo := int32(binary.NativeEndian.Uint32(info[0:]))
			code := int32(binary.NativeEndian.Uint32(info[8:]))
			pid := int32(binary.NativeEndian.Uint32(info[16:]))
			if !sentByAnother(code, pid, self) {
				tapOwn.Add(1)
				continue
			}
			tap.mu.Lock()
			if tap.out != nil {
				select {
				case tap.out <- tapSignal(signo):
				default:
				}
			}
			tap.mu.Unlock()
		}
		carry = append(carry[:0], data...)
	}
}

// sentByAnother tells a signal sent by a process (kill, sigqueue, tgkill:
// si_code ≤ 0) other than us from what we caused ourselves: the runtime's
// preemption tgkill and the kernel's SIGPIPE for our writes carry our own
// pid; a timer's or the kernel's own (si_code > 0) are not sent. A sender
// outside our pid namespace shows as pid 0.
func sentByAnother(code, pid, self int32) bool {
	return code <= 0 && pid != self
}
