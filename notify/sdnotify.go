package notify

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Message is one sd_notify datagram: newline-separated KEY=VALUE
// assignments (sd_notify(3)). Known keys are decoded; every assignment is
// also in Fields, as sent.
type Message struct {
	// Pid, Uid and Gid of the sender as the kernel vouches for them
	// (SCM_CREDENTIALS, translated into our pid namespace); Pid is 0 when
	// the kernel sent none. A privileged sender may name another pid (its
	// parent: systemd-notify does so).
	Pid, Uid, Gid int
	Ready         bool // READY=1
	Reloading     bool // RELOADING=1
	Stopping      bool // STOPPING=1
	// Status is STATUS=…, a line for status output; "" when absent or
	// cleared (Fields tells which).
	Status string
	// Watchdog is WATCHDOG=1, a keep-alive ping.
	Watchdog bool
	// WatchdogTrigger is WATCHDOG=trigger: the program asks to be treated
	// as if its watchdog had expired.
	WatchdogTrigger bool
	// WatchdogTimeout is WATCHDOG_USEC=…: the program sets its own
	// watchdog timeout (0 when absent or invalid).
	WatchdogTimeout time.Duration
	// MainPID is MAINPID=…: the program says its main process is another
	// one (0 when absent or invalid).
	MainPID int
	// Errno is ERRNO=…: the program reports a failure (0 when absent).
	Errno int
	// Fields are all the assignments; a key sent twice keeps the last.
	Fields map[string]string
}

// ParseMessage decodes one datagram. Lines without '=' are ignored, as
// systemd does.
func ParseMessage(data []byte) Message {
	m := Message{Fields: map[string]string{}}
	for line := range strings.SplitSeq(string(data), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			continue
		}
		m.Fields[k] = v
		switch k {
		case "READY":
			m.Ready = v == "1"
		case "RELOADING":
			m.Reloading = v == "1"
		case "STOPPING":
			m.Stopping = v == "1"
		case "STATUS":
			m.Status = v
		case "WATCHDOG":
			m.Watchdog = v == "1"
			m.WatchdogTrigger = v == "trigger"
		case "WATCHDOG_USEC":
			if us, err := strconv.ParseUint(v, 10, 63); err == nil && us <= uint64(1<<63-1)/uint64(time.Microsecond) {
				m.WatchdogTimeout = time.Duration(us) * time.Microsecond
			}
		case "MAINPID":
			if pid, err := strconv.Atoi(v); err == nil && pid > 0 {
				m.MainPID = pid
			}
		case "ERRNO":
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				m.Errno = n
			}
		}
	}
	return m
}

// maxDatagram is systemd's NOTIFY_BUFFER_MAX: longer messages are dropped.
const maxDatagram = 4096

// Socket is a unixgram socket receiving sd_notify messages from one
// program, which finds its path in NOTIFY_SOCKET (see Env).
type Socket struct {
	conn     *net.UnixConn
	path     string
	dir      string // the private directory made for it, removed on Close
	closing  chan struct{}
	once     sync.Once
	closeErr error

	// The reader: one at a time, started by ListenSocket or Resume and
	// ended by Close or Detach; each has its own Messages channel.
	mu       sync.Mutex    // guards the two below
	messages chan Message  // the current reader's
	done     chan struct{} // closed once the current reader returned

	delivering atomic.Bool // a message read is being handed to Messages
}

// ListenSocket binds a unixgram socket at path and starts reading it. A
// path starting with '@' is an abstract socket (Linux); any other path is
// a file, created mode 0600 (a stale socket file left there is replaced).
// The mode is set by path after bind: path's directory must be one no one
// else can write (ListenPrivate makes one).
// The kernel attaches each sender's credentials (SO_PASSCRED); file
// descriptors sent along (sd_notify_barrier's, FDSTORE=1's) are closed at
// once, which is what releases a barrier.
func ListenSocket(path string) (*Socket, error) {
	if path == "" {
		return nil, errors.New("listen notify socket: empty path")
	}
	abstract := path[0] == '@'
	if !abstract {
		if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == fs.ModeSocket {
			os.Remove(path)
		}
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("listen notify socket %s: %w", path, err)
	}
	if !abstract {
		if err := os.Chmod(path, 0o600); err != nil {
			conn.Close()
			return nil, fmt.Errorf("listen notify socket %s: %w", path, err)
		}
	}
	if err := passCred(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("listen notify socket %s: SO_PASSCRED: %w", path, err)
	}
	s := &Socket{conn: conn, path: path, closing: make(chan struct{}), done: closedChan()}
	s.Resume()
	return s, nil
}

// Path is the socket's address, what NOTIFY_SOCKET must say.
func (s *Socket) Path() string { return s.path }

// Messages delivers each valid datagram in arrival order. It is closed
// once the socket is closed (or its reading failed). A consumer that falls
// behind makes senders wait (the kernel queue fills), never loses messages
// already read.
func (s *Socket) Messages() <-chan Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.messages
}

// Close stops reading, removes the socket file and closes Messages. It may
// be called more than once.
func (s *Socket) Close() error {
	s.once.Do(func() {
		close(s.closing)
		s.closeErr = s.conn.Close()
		<-s.readerDone()
		if s.path[0] != '@' {
			if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) && s.closeErr == nil {
				s.closeErr = err
			}
		}
		if s.dir != "" {
			if err := os.Remove(s.dir); err != nil && !errors.Is(err, fs.ErrNotExist) && s.closeErr == nil {
				s.closeErr = err
			}
		}
	})
	return s.closeErr
}

func (s *Socket) read(messages chan<- Message, done chan<- struct{}) {
	defer close(done)
	defer close(messages)
	buf := make([]byte, maxDatagram+1)
	oob := make([]byte, oobSize)
	for {
		n, oobn, flags, _, err := s.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			return // closed, detached, or a failure no retry would mend
		}
		pid, uid, gid := parseOOB(oob[:oobn])
		if n == 0 || n > maxDatagram || flags&msgTrunc != 0 {
			continue
		}
		m := ParseMessage(buf[:n])
		if _, ok := m.Fields["BARRIER"]; ok && len(m.Fields) == 1 {
			continue // sd_notify_barrier's: parseOOB closed its fd, which answers it
		}
		m.Pid, m.Uid, m.Gid = pid, uid, gid
		// Delivered even while detaching: a message read is one the
		// consumer must see before the hand-over.
		s.delivering.Store(true)
		select {
		case messages <- m:
			s.delivering.Store(false)
		case <-s.closing:
			s.delivering.Store(false)
			return
		}
	}
}

// Pending says whether a datagram has arrived that Messages has not
// delivered yet: in the kernel's queue, being read, or buffered. The
// watchdog asks before it fires.
func (s *Socket) Pending() bool {
	s.mu.Lock()
	ch := s.messages
	s.mu.Unlock()
	return len(ch) > 0 || s.delivering.Load() || queued(s.conn)
}

// Env returns what a program started with notify = "sd_notify" gets in
// its environment: NOTIFY_SOCKET, and WATCHDOG_USEC when watchdog > 0
// (sd_watchdog_enabled(3) reads it to learn how often to ping).
func Env(socketPath string, watchdog time.Duration) []string {
	env := []string{"NOTIFY_SOCKET=" + socketPath}
	if watchdog > 0 {
		env = append(env, "WATCHDOG_USEC="+strconv.FormatInt(watchdog.Microseconds(), 10))
	}
	return env
}

// NotifySystemd sends state (e.g. "READY=1", "STOPPING=1",
// "STATUS=3 programs ready") to the service manager that started us, at
// $NOTIFY_SOCKET: a path, or an abstract socket written "@name". Without
// NOTIFY_SOCKET it does nothing and returns nil.
func NotifySystemd(state string) error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	return Send(path, state)
}

// Send sends state as one datagram to the sd_notify socket at path.
func Send(path, state string) error {
	if path == "" || path[0] != '/' && path[0] != '@' {
		return fmt.Errorf("sd_notify to %q: only a socket path or an @abstract name is supported", path)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify to %s: %w", path, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify to %s: %w", path, err)
	}
	return nil
}
