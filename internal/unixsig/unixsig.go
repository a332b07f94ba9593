// Package unixsig is the one home of signal names: how a user writes a
// signal (config files, supervisectl, supervise exec flags), how logs and
// the control protocol name one, and which signals a process may take
// through os/signal at all.
package unixsig

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Parse reads a signal as a user writes it: a name with or without the SIG
// prefix, in any case ("TERM", "SIGTERM", "hup"), or a number ("15").
func Parse(s string) (syscall.Signal, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	if n, err := strconv.Atoi(t); err == nil {
		if n < 1 || n > 64 {
			return 0, fmt.Errorf("signal number %d out of range 1-64", n)
		}
		return syscall.Signal(n), nil
	}
	if !strings.HasPrefix(t, "SIG") {
		t = "SIG" + t
	}
	// unix.SignalNum would build a map of every name on its first call,
	// at every start of an init that parses its stop signal; the names
	// are a sorted table SignalName searches without allocating.
	for sig := syscall.Signal(1); sig <= 64; sig++ {
		if unix.SignalName(sig) == t {
			return sig, nil
		}
	}
	return 0, fmt.Errorf("unknown signal %q (want a name like TERM, INT, QUIT, HUP, USR1, or a number 1-64)", s)
}

// Name is the short upper-case name of sig ("TERM"), or its number when it
// has none (real-time signals); "" for 0, no signal.
func Name(sig syscall.Signal) string {
	if sig == 0 {
		return ""
	}
	if n := unix.SignalName(sig); n != "" {
		return strings.TrimPrefix(n, "SIG")
	}
	return strconv.Itoa(int(sig))
}

// Catchable lists the signals a Go program may take through os/signal:
// 1 to 64 but KILL and STOP (nobody can), URG (the Go scheduler preempts
// with it, all the time) and 32 and 33 (the C library's, for its
// threads). The fault signals (SEGV, BUS, FPE, ILL) are in: raised by the
// program itself they are panics whatever os/signal is told, and sent by
// another process they are just signals. Callers take out what is theirs
// to keep (the reaper's CHLD).
func Catchable(except ...syscall.Signal) []os.Signal {
	nums := CatchableNums(except...)
	sigs := make([]os.Signal, len(nums))
	for i, s := range nums {
		sigs[i] = s
	}
	return sigs
}

// CatchableNums is Catchable as signal numbers, in one allocation with
// room for one more: an init takes them at every start, and a slice grown
// one append at a time touches a fresh page for each size it passes
// through.
func CatchableNums(except ...syscall.Signal) []syscall.Signal {
	sigs := make([]syscall.Signal, 0, 64)
	for s := syscall.Signal(1); s <= 64; s++ {
		switch s {
		case unix.SIGKILL, unix.SIGSTOP, unix.SIGURG, 32, 33:
			continue
		}
		skip := false
		for _, e := range except {
			skip = skip || s == e
		}
		if !skip {
			sigs = append(sigs, s)
		}
	}
	return sigs
}
