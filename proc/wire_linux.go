package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The runtime and a sandbox init talk over a SOCK_SEQPACKET socketpair:
// one JSON message per packet, stdio fds passed with SCM_RIGHTS. Requests
// carry a Seq the reply repeats; exits are sent unasked.
const (
	opSetup   = "setup"   // → init: set up the namespaces; first message, also the "placed" sync
	opReady   = "ready"   // ← init: setup done
	opStart   = "start"   // → init: fork Spec as Child with fds [stdout, stderr]
	opStarted = "started" // ← init: Child runs as Pid (in the init's pid namespace)
	opSignal  = "signal"  // → init: Signal to Child's process group
	opKillAll = "killall" // → init: SIGKILL every process of the sandbox but the init
	opOK      = "ok"      // ← init: done
	opError   = "error"   // ← init: Err
	opExited  = "exited"  // ← init: Child exited with wait Status
)

type message struct {
	Op     string     `json:"op"`
	Seq    uint64     `json:"seq,omitempty"`
	Child  uint64     `json:"child,omitempty"`
	Spec   *spawnSpec `json:"spec,omitempty"`
	Setup  *initSetup `json:"setup,omitempty"`
	Pid    int        `json:"pid,omitempty"`
	Status uint32     `json:"status,omitempty"`
	Signal int        `json:"sig,omitempty"`
	Err    string     `json:"err,omitempty"`
}

// initSetup is what the init does inside its new namespaces before it
// serves requests.
type initSetup struct {
	PrivateRoot bool   `json:"private_root,omitempty"`
	MountProc   bool   `json:"mount_proc,omitempty"`
	Hostname    string `json:"hostname,omitempty"`
	Loopback    bool   `json:"loopback,omitempty"`
}

const maxMessage = 1 << 20

// seqConn is one end of the socketpair, read and written through the
// Go poller. Not net.UnixConn: the net package would be linked into the
// init binaries for it, and its initialisation slows every init's start.
type seqConn struct {
	f      *os.File
	rc     syscall.RawConn
	closed atomic.Bool
}

// packetConn takes over f, one end of the socketpair.
func packetConn(f *os.File) (*seqConn, error) {
	defer f.Close() // we keep a non-blocking duplicate, as net.FileConn does
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(old uintptr) {
		fd, derr = unix.FcntlInt(old, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("control socket: %w", derr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("control socket: %w", err)
	}
	nf := os.NewFile(uintptr(fd), f.Name())
	c, err := fileConn(nf)
	if err != nil {
		nf.Close()
	}
	return c, err
}

// fileConn takes over f as it is, its descriptor number kept: an init's
// socket inherited across an upgrade, which a fall-back to the previous
// binary passes on again by that number. On error f is left open.
func fileConn(f *os.File) (*seqConn, error) {
	c := &seqConn{f: f}
	var err error
	if c.rc, err = f.SyscallConn(); err != nil {
		return nil, err
	}
	var nerr error
	if err := c.rc.Control(func(fd uintptr) { nerr = unix.SetNonblock(int(fd), true) }); err != nil || nerr != nil {
		return nil, fmt.Errorf("control socket: %w", errors.Join(err, nerr))
	}
	return c, nil
}

func (c *seqConn) Close() error {
	c.closed.Store(true)
	return c.f.Close()
}

// CloseWrite shuts the sending side: the peer reads end of file.
func (c *seqConn) CloseWrite() error {
	var serr error
	if err := c.rc.Control(func(fd uintptr) { serr = unix.Shutdown(int(fd), unix.SHUT_WR) }); err != nil {
		return err
	}
	return serr
}

func (c *seqConn) sendmsg(b, oob []byte) error {
	var serr error
	err := c.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), b, oob, nil, 0)
		return serr != unix.EAGAIN
	})
	if err != nil {
		return err
	}
	return serr
}

func (c *seqConn) recvmsg(b, oob []byte) (n, oobn, flags int, err error) {
	var rerr error
	err = c.rc.Read(func(fd uintptr) bool {
		n, oobn, flags, _, rerr = unix.Recvmsg(int(fd), b, oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	return n, oobn, flags, err
}

func writeMsg(c *seqConn, m *message, fds ...int) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(b) > maxMessage {
		return fmt.Errorf("%s message too large (%d bytes)", m.Op, len(b))
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	return c.sendmsg(b, oob)
}

// readMsg returns the next message and the fds that came with it (the
// caller owns them). io.EOF means the peer is gone.
func readMsg(c *seqConn, buf, oob []byte) (message, []int, error) {
	n, oobn, flags, err := c.recvmsg(buf, oob)
	var fds []int
	if oobn > 0 {
		fds = receivedFds(oob[:oobn])
	}
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if err != nil {
		closeAll()
		if c.closed.Load() || errors.Is(err, os.ErrClosed) {
			return message{}, nil, io.EOF
		}
		return message{}, nil, err
	}
	if n == 0 {
		closeAll()
		return message{}, nil, io.EOF
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		closeAll()
		return message{}, nil, errors.New("control message truncated")
	}
	var m message
	if err := json.Unmarshal(buf[:n], &m); err != nil {
		closeAll()
		return message{}, nil, fmt.Errorf("decoding control message: %w", err)
	}
	return m, fds, nil
}

// receivedFds are the descriptors of SCM_RIGHTS messages in oob.
func receivedFds(oob []byte) []int {
	var fds []int
	cmsgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	for _, cm := range cmsgs {
		if fs, err := unix.ParseUnixRights(&cm); err == nil {
			fds = append(fds, fs...)
		}
	}
	return fds
}
