package notify

import (
	"net"

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
