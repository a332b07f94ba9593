package notify

import (
	"errors"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// oobSize holds a sender's credentials and the most descriptors one
// message can carry (SCM_MAX_FD): whatever does not fit, the kernel closes.
var oobSize = unix.CmsgSpace(unix.SizeofUcred) + unix.CmsgSpace(253*4)

const msgTrunc = unix.MSG_TRUNC

// passCred asks the kernel to attach each sender's credentials.
func passCred(conn *net.UnixConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil {
		return err
	}
	return serr
}

// parseOOB returns the sender's credentials and closes every descriptor
// that came along: we keep none (no FDSTORE), and closing a barrier's pipe
// is what tells sd_notify_barrier(3) that its messages were read.
func parseOOB(oob []byte) (pid, uid, gid int) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, 0, 0
	}
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Level != unix.SOL_SOCKET {
			continue
		}
		switch m.Header.Type {
		case unix.SCM_CREDENTIALS:
			if c, err := unix.ParseUnixCredentials(m); err == nil {
				pid, uid, gid = int(c.Pid), int(c.Uid), int(c.Gid)
			}
		case unix.SCM_RIGHTS:
			fds, _ := unix.ParseUnixRights(m)
			for _, fd := range fds {
				unix.Close(fd)
			}
		}
	}
	return pid, uid, gid
}

// checkSocket checks that f, handed over by another binary, is a unix
// datagram socket bound to path.
func checkSocket(f *os.File, path string) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		dom, err1 := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
		typ, err2 := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TYPE)
		if err1 != nil || err2 != nil || dom != unix.AF_UNIX || typ != unix.SOCK_DGRAM {
			serr = errors.New("the descriptor is not a unix datagram socket")
			return
		}
		sa, err := unix.Getsockname(int(fd))
		if u, ok := sa.(*unix.SockaddrUnix); err != nil || !ok || u.Name != path {
			serr = errors.New("the descriptor is not the socket bound there")
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// monotonicNow is CLOCK_MONOTONIC in nanoseconds: the same clock for
// every process of this boot, so it measures across an exec.
func monotonicNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// queued says whether conn's receive queue holds a datagram (SIOCINQ: the
// length of the next one; an empty datagram, which carries nothing, reads
// as none).
func queued(conn *net.UnixConn) bool {
	raw, err := conn.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	cerr := raw.Control(func(fd uintptr) {
		n, err = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	})
	return cerr == nil && err == nil && n > 0
}
