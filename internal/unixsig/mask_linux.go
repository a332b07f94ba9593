package unixsig

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// startedClean marks the image StartUnblocked executed: it does not try
// again, whatever its mask.
const startedClean = "SUPERVISE_SIGMASK_CLEARED"

// StartUnblocked makes sure the running program has no signal blocked,
// for the processes it forks: a Go program forks with the signal mask it
// was started with (the runtime restores it in the child), so a parent
// that started us with, say, SIGUSR1 blocked would have every program we
// start ignore its log-reopen signal, where systemd and dumb-init start
// programs with none blocked. When the calling thread has any blocked, it
// executes the running binary again, with the same arguments,
// environment and descriptors, from a thread with none blocked; it
// returns only when there is nothing to do, or the exec failed (then the
// program goes on as it was). A signal that was pending while blocked is
// delivered as the mask clears, before our handlers are in, and the Go
// runtime ignores the kinds a parent blocks (it keeps none blocked whose
// default is to end the program).
func StartUnblocked() error {
	if _, again := os.LookupEnv(startedClean); again {
		os.Unsetenv(startedClean)
		return nil
	}
	var blocked unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, nil, &blocked); err != nil || blocked == (unix.Sigset_t{}) {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var none unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &none, nil); err != nil {
		return err
	}
	err := unix.Exec("/proc/self/exe", os.Args, append(os.Environ(), startedClean+"=1"))
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &blocked, nil)
	return err
}
