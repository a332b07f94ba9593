package pid1

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cpuPin keeps every thread of the process on the CPU it runs on while a
// Config.Dedicated init installs its signal handlers.
//
// Why: os/signal enables each signal with a round trip to a runtime
// thread of its own (runtime.ensureSigM), so asking for the ~60 catchable
// signals takes ~130 thread switches. On one CPU a wake-up is a run-queue
// insert; across CPUs it is an inter-processor interrupt (a VM exit on a
// virtual machine), and the idle threads the Go scheduler wakes to look
// for work spin on the other CPU. Measured on the 2-CPU VM with a load
// of ~3: signal.Notify of every signal 0.38 ms pinned against 1.7 ms
// (p90 3.3 ms) unpinned.
//
// The command never inherits the pin: release restores every thread, and
// forkExec forks from a thread with the original mask in any case.
type cpuPin struct {
	orig   unix.CPUSet // the mask the process had
	pinned bool
}

// pinThreads pins the process to the CPU it runs on. Where that cannot
// help or cannot be done (a one-CPU mask, an unreadable mask or /proc)
// the pin stays released.
func pinThreads() *cpuPin {
	p := &cpuPin{}
	if err := unix.SchedGetaffinity(0, &p.orig); err != nil || p.orig.Count() < 2 {
		return p
	}
	cpu := currentCPU()
	if cpu < 0 || !p.orig.IsSet(cpu) {
		return p
	}
	var one unix.CPUSet
	one.Set(cpu)
	p.pinned = true // a failure part way leaves some threads pinned
	if err := setThreadsAffinity(&one); err != nil {
		p.release()
	}
	return p
}

// release gives every thread its original mask back. A nil pin is
// released.
func (p *cpuPin) release() {
	if p == nil || !p.pinned {
		return
	}
	p.pinned = false
	_ = setThreadsAffinity(&p.orig)
}

// forkExec is syscall.ForkExec from a thread with the original mask, so
// that the child gets that mask: a thread the runtime started from a
// pinned one while release walked the threads may still be pinned.
func (p *cpuPin) forkExec(path string, args []string, attr *syscall.ProcAttr) (int, error) {
	if p == nil || p.orig.Count() < 2 { // never pinned
		return syscall.ForkExec(path, args, attr)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cur unix.CPUSet
	if err := unix.SchedGetaffinity(0, &cur); err != nil || cur != p.orig {
		// It set this mask before; should it fail now, the command
		// still starts.
		_ = unix.SchedSetaffinity(0, &p.orig)
	}
	return syscall.ForkExec(path, args, attr)
}

// setThreadsAffinity sets the mask of every thread of the process. A new
// thread inherits the mask of the thread that made it, so threads the
// runtime starts afterwards have it too; one started during a pass by a
// thread not yet set is not in that pass's listing, so passes repeat until
// one finds no thread it has not set (a few at most).
func setThreadsAffinity(set *unix.CPUSet) error {
	var first error
	done := map[int]bool{}
	for range 16 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := 0
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			done[tid] = true
			fresh++
			if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) && first == nil {
				first = err
			}
		}
		if fresh == 0 {
			break
		}
	}
	return first
}

// currentCPU is the CPU the calling thread runs on, -1 if unknown.
func currentCPU() int {
	var cpu uint32
	if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0); e != 0 {
		return -1
	}
	return int(cpu)
}
