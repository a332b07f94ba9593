package main

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// writeSealed puts data in a memfd sealed against any change: the new
// binary reads exactly what was written, and nobody can alter it.
func writeSealed(data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("supervise-upgrade-state", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("creating the state memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "supervise-upgrade-state")
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the state: %w", err)
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("sealing the state: %w", err)
	}
	return f, nil
}

// parentDeathSignal is the signal the kernel is to send supervise when its
// parent dies (prctl PR_SET_PDEATHSIG, as `unshare --kill-child` and
// container runtimes set it). It is a setting of each thread, and the
// thread that calls execve is the one that survives it: read here, on the
// main thread (package variables are initialised there), and set again on
// the thread that execs, or an upgrade in place would drop it.
var parentDeathSignal = func() int {
	var sig int32
	_ = unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0)
	return int(sig)
}()

// keepParentDeathSignal sets parentDeathSignal on the calling thread, which
// must be locked to its goroutine and about to exec.
func keepParentDeathSignal() {
	if parentDeathSignal != 0 {
		_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(parentDeathSignal), 0, 0, 0)
	}
}
