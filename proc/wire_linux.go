package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

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

// packetConn wraps one end of the socketpair.
func packetConn(f *os.File) (*net.UnixConn, error) {
	c, err := net.FileConn(f)
	f.Close() // FileConn dup'ed it
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("control socket is a %T", c)
	}
	return uc, nil
}

func writeMsg(c *net.UnixConn, m *message, fds ...int) error {
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
	_, _, err = c.WriteMsgUnix(b, oob, nil)
	return err
}

// readMsg returns the next message and the fds that came with it (the
// caller owns them). io.EOF means the peer is gone.
func readMsg(c *net.UnixConn, buf, oob []byte) (message, []int, error) {
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	var fds []int
	if oobn > 0 {
		if cmsgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, cm := range cmsgs {
				if fs, err := unix.ParseUnixRights(&cm); err == nil {
					fds = append(fds, fs...)
				}
			}
		}
	}
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if err != nil {
		closeAll()
		if errors.Is(err, net.ErrClosed) {
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
