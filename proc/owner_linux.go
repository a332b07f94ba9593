package proc

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// pfExiting is PF_EXITING in a task's flags (/proc/PID/stat field 9): the
// task is in the kernel's exit path and runs no more user code.
const pfExiting = 0x4

// sigkillBit is SIGKILL's bit in /proc/PID/status's SigPnd and ShdPnd.
const sigkillBit = 1 << (unix.SIGKILL - 1)

// procStat is what the sweep reads of /proc/PID/stat.
type procStat struct {
	state     byte   // R, S, D, Z, X, ...
	flags     uint64 // the thread group leader's task flags
	startTime uint64 // clock ticks after boot
}

// readProcStat reads /proc/<pid>/stat; the error is fs.ErrNotExist once
// the pid is free.
func readProcStat(pid int) (procStat, error) {
	b, err := readSmall("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b)
}

// parseProcStat parses a stat line. The command name (field 2) is the
// program's to choose, spaces and parentheses included: the fields that
// matter are counted from the last ')'.
func parseProcStat(b []byte) (procStat, error) {
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return procStat{}, errors.New("no command name in /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[6] field 9 (flags), f[19] field 22 (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, errors.New("short /proc stat line")
	}
	flags, err1 := strconv.ParseUint(f[6], 10, 64)
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procStat{}, err
	}
	return procStat{state: f[0][0], flags: flags, startTime: start}, nil
}

// readSmall reads a /proc file of a few hundred bytes, bounded all the
// same: what a file may hold is not ours to trust.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 16<<10))
}

// initialTimeNS reports whether we are in the initial time namespace (or on
// a kernel without time namespaces). Start times in /proc are shifted by
// the reader's time namespace: they are recorded and compared only where
// every supervisor reads them alike.
var initialTimeNS = sync.OnceValue(func() bool {
	ns, err := os.Readlink("/proc/self/ns/time")
	return errors.Is(err, fs.ErrNotExist) || ns == "time:[4026531834]"
})

// selfStartTime is this process's start time, recorded in its owner tag so
// that a later supervisor can tell it from a process that got its pid
// after it died; 0 when /proc cannot say it plainly.
func selfStartTime() uint64 {
	if !initialTimeNS() {
		return 0
	}
	st, err := readProcStat(os.Getpid())
	if err != nil {
		return 0
	}
	return st.startTime
}

// ownerLives reports whether the supervisor that owns o (in the initial
// pid namespace, as we are) still runs. An owner that is dying counts as
// dead: a SIGKILLed supervisor lingers as an exiting process, then as a
// zombie until its parent reaps it, and its programs must not outlive it
// into a new supervisor's run. Dying is: gone, a zombie, in the exit path
// (PF_EXITING), or with a SIGKILL pending that it has not acted on yet. A
// pid that came back for another process (its start time differs from the
// one in the tag) is dead too; without a recorded start time (an older
// supervisor's names) a live pid is given the benefit of the doubt.
func ownerLives(o owner) bool {
	if o.pid == os.Getpid() {
		return false // ours by pid, and not our tag: an earlier run's
	}
	st, err := readProcStat(o.pid)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false
	case err != nil:
		return unix.Kill(o.pid, 0) != unix.ESRCH // no /proc: the pid alone
	case st.state == 'Z' || st.state == 'X' || st.state == 'x':
		return false
	case st.flags&pfExiting != 0:
		return false
	case o.start != 0 && initialTimeNS() && st.startTime != o.start:
		return false
	}
	return !sigkillPending(o.pid)
}

// sigkillPending reports whether pid has a SIGKILL queued: the kernel marks
// a killed process's threads so before they run their way into exit.
func sigkillPending(pid int) bool {
	b, err := readSmall("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		key, val, ok := strings.Cut(line, ":")
		if !ok || key != "SigPnd" && key != "ShdPnd" {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(val), 16, 64)
		if err == nil && mask&sigkillBit != 0 {
			return true
		}
	}
	return false
}
