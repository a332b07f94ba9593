package proc

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// loopbackUp sets IFF_UP on lo with one RTM_NEWLINK request: a new network
// namespace has lo down, and we must not depend on an `ip` binary.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return fmt.Errorf("finding lo: %w", err)
	}

	const hdr, body = unix.SizeofNlMsghdr, unix.SizeofIfInfomsg
	b := make([]byte, hdr+body)
	*(*unix.NlMsghdr)(unsafe.Pointer(&b[0])) = unix.NlMsghdr{
		Len:   uint32(len(b)),
		Type:  unix.RTM_NEWLINK,
		Flags: unix.NLM_F_REQUEST | unix.NLM_F_ACK,
		Seq:   1,
	}
	*(*unix.IfInfomsg)(unsafe.Pointer(&b[hdr])) = unix.IfInfomsg{
		Family: unix.AF_UNSPEC,
		Index:  int32(ifr.Uint32()),
		Flags:  unix.IFF_UP,
		Change: unix.IFF_UP,
	}
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, 4096)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return fmt.Errorf("netlink receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("netlink parse: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != 1 || m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4 {
				continue
			}
			if code := int32(binary.NativeEndian.Uint32(m.Data[:4])); code != 0 {
				return fmt.Errorf("setting lo up: %w", syscall.Errno(-code))
			}
			return nil
		}
	}
}
