package ctl

import (
	"fmt"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// peerOf reads who is at the other end of c, as the kernel recorded it at
// connect time (SO_PEERCRED, SO_PEERGROUPS): it cannot be spoofed and does
// not change when the client later drops privileges.
func peerOf(c net.Conn) peer {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return peer{err: fmt.Errorf("%T is not a socket", c)}
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return peer{err: err}
	}
	var p peer
	cerr := raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		cred, p.err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if p.err != nil {
			return
		}
		p.uid, p.gid, p.pid = int(cred.Uid), int(cred.Gid), int(cred.Pid)
		// Supplementary groups are best effort (Linux >= 4.13): without
		// them only the primary group counts.
		p.groups, _ = peerGroups(fd)
	})
	if cerr != nil {
		return peer{err: cerr}
	}
	if p.err != nil {
		p.err = fmt.Errorf("reading SO_PEERCRED: %w", p.err)
	}
	return p
}

// peerGroups reads SO_PEERGROUPS, which x/sys/unix has no helper for: the
// value is an array of gid_t whose length the kernel reports (ERANGE with
// the needed length when the buffer is short).
func peerGroups(fd uintptr) ([]uint32, error) {
	buf := make([]uint32, 32)
	for range 3 {
		size := uint32(len(buf) * 4)
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0)
		switch errno {
		case 0:
			return buf[:size/4], nil
		case unix.ERANGE:
			buf = make([]uint32, size/4+1)
		default:
			return nil, errno
		}
	}
	return nil, unix.ERANGE
}
