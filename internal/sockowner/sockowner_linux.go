package sockowner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// The kernel's sock_diag structures (linux/inet_diag.h), laid out by hand:
// x/sys has no types for them.
const (
	nlmsgHdrLen   = 16
	diagReqLen    = 56 // struct inet_diag_req_v2
	diagMsgLen    = 72 // struct inet_diag_msg
	diagMsgUIDOff = 64
	noCookie      = ^uint32(0) // INET_DIAG_NOCOOKIE
	nlmsgError    = 2          // NLMSG_ERROR
)

// Owner returns the uid of the process that made the socket at c's far
// end, when that socket is on this host; ok is false for a remote client
// or a connection that is not TCP.
func Owner(c net.Conn) (uid uint32, ok bool) {
	local, lok := c.LocalAddr().(*net.TCPAddr)
	remote, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return 0, false
	}
	// The far end's socket has the remote address as its own.
	src, sok := netip.AddrFromSlice(remote.IP)
	dst, dok := netip.AddrFromSlice(local.IP)
	if !sok || !dok {
		return 0, false
	}
	src, dst = src.Unmap(), dst.Unmap()
	if src.Is4() && dst.Is4() {
		if uid, err := lookup(unix.AF_INET, src, uint16(remote.Port), dst, uint16(local.Port)); err == nil {
			return uid, true
		}
		// A client may have dialed an IPv4 address from an IPv6 socket.
		src, dst = netip.AddrFrom16(src.As16()), netip.AddrFrom16(dst.As16())
	}
	uid, err := lookup(unix.AF_INET6, src, uint16(remote.Port), dst, uint16(local.Port))
	return uid, err == nil
}

// lookup asks the kernel for the TCP socket whose own address is
// src:sport and whose peer is dst:dport.
func lookup(family uint8, src netip.Addr, sport uint16, dst netip.Addr, dport uint16) (uint32, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, fmt.Errorf("sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	// The kernel answers at once; the bound is for a kernel that does not.
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return 0, fmt.Errorf("sock_diag timeout: %w", err)
	}

	req := make([]byte, nlmsgHdrLen+diagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1) // sequence
	r := req[nlmsgHdrLen:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(r[4:], ^uint32(0)) // any state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], sport)
	binary.BigEndian.PutUint16(id[2:], dport)
	putAddr(id[4:20], src)
	putAddr(id[20:36], dst)
	ne.PutUint32(id[40:], noCookie)
	ne.PutUint32(id[44:], noCookie)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("sock_diag request: %w", err)
	}

	buf := make([]byte, 1024)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, fmt.Errorf("sock_diag reply: %w", err)
	}
	msg := buf[:n]
	if len(msg) < nlmsgHdrLen {
		return 0, errors.New("sock_diag reply: short")
	}
	switch typ := ne.Uint16(msg[4:]); typ {
	case nlmsgError:
		if len(msg) >= nlmsgHdrLen+4 {
			if e := int32(ne.Uint32(msg[nlmsgHdrLen:])); e < 0 {
				return 0, fmt.Errorf("sock_diag: %w", unix.Errno(-e))
			}
		}
		return 0, errors.New("sock_diag: no socket")
	case unix.SOCK_DIAG_BY_FAMILY:
		if len(msg) < nlmsgHdrLen+diagMsgLen {
			return 0, errors.New("sock_diag reply: short")
		}
		return ne.Uint32(msg[nlmsgHdrLen+diagMsgUIDOff:]), nil
	default:
		return 0, fmt.Errorf("sock_diag reply: message type %d", typ)
	}
}

// putAddr writes a as the kernel's __be32[4]: an IPv4 address in the
// first word.
func putAddr(b []byte, a netip.Addr) {
	if a.Is4() {
		v := a.As4()
		copy(b, v[:])
		return
	}
	v := a.As16()
	copy(b, v[:])
}
