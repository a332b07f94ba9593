package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeRangeCloexec is CLOSE_RANGE_CLOEXEC of linux/close_range.h.
const closeRangeCloexec = 1 << 2

// CloseOnExecFrom marks every open descriptor from first up close-on-exec,
// so that what this process inherited (a secret on fd 7 of the shell that
// started us) never reaches a program started across a uid drop. The
// descriptors stay usable here; only exec closes them. It is close_range
// with CLOSE_RANGE_CLOEXEC (Linux 5.11), else a walk of /proc/self/fd,
// else fcntl on every number below the descriptor limit.
func CloseOnExecFrom(first int) error {
	if first < 0 {
		first = 0
	}
	err := unix.CloseRange(uint(first), ^uint(0), closeRangeCloexec)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("close_range(%d, ~0, CLOEXEC): %w", first, err)
	}
	if err := cloexecProcFDs(first); err == nil {
		return nil
	}
	var lim unix.Rlimit
	n := uint64(1 << 16)
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur < n {
		n = lim.Cur
	}
	for fd := first; uint64(fd) < n; fd++ {
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC) // EBADF: not open
	}
	return nil
}

// cloexecProcFDs marks the descriptors listed in /proc/self/fd. The
// directory's own descriptor is close-on-exec already.
func cloexecProcFDs(first int) error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd < first {
			continue
		}
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
	}
	return nil
}
