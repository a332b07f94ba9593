package logs

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// setPipeSize asks for a pipe buffer of size bytes, best effort: without
// CAP_SYS_RESOURCE the kernel refuses more than /proc/sys/fs/pipe-max-size
// (EPERM), and then we take that limit. The kernel default (64 KiB) works
// too, only with more wake-ups.
func setPipeSize(f *os.File, size int) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		if _, err := unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size); err == nil {
			return
		}
		b, err := os.ReadFile("/proc/sys/fs/pipe-max-size")
		if err != nil {
			return
		}
		if max, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && max < size {
			unix.FcntlInt(fd, unix.F_SETPIPE_SZ, max)
		}
	})
}

// unread returns how many bytes the pipe or terminal fd holds unread.
// (TIOCINQ is FIONREAD, which pipes answer too.)
func unread(fd uintptr) (int, error) { return unix.IoctlGetInt(int(fd), unix.TIOCINQ) }
