package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// exitStatus is how a child ended, as seen by whoever reaped it.
type exitStatus struct {
	ws unix.WaitStatus
	// lost: the sandbox init died before reporting the child; the child
	// is taken as killed (a pid namespace dies with its init).
	lost bool
	at   time.Time
}

// initClient is the runtime's end of a sandbox init's control socket.
type initClient struct {
	pid   int  // host pid of the init
	pidNS bool // the init is PID 1 of its own pid namespace
	conn  *seqConn
	gone  chan struct{} // closed when the init's socket closed (it died or exited)
	// reaped is closed once the init was reaped. Its socket closes early
	// in its exit; as PID 1 it becomes reapable only after the kernel
	// killed and released every other process of its namespace.
	reaped chan struct{}

	wmu sync.Mutex // serializes writes to conn

	mu       sync.Mutex
	seq      uint64                       // guarded by mu
	pending  map[uint64]chan message      // guarded by mu: replies by Seq
	children map[uint64]chan<- exitStatus // guarded by mu: exits by child key
	dead     bool                         // guarded by mu
	// held, while a hand-over is frozen, stops readLoop between two
	// messages until it is closed; readLoop closes parked once stopped.
	held, parked chan struct{} // guarded by mu
}

func newInitClient(pid int, pidNS bool, conn *seqConn) *initClient {
	return &initClient{
		pid: pid, pidNS: pidNS, conn: conn,
		gone:     make(chan struct{}),
		reaped:   make(chan struct{}),
		pending:  make(map[uint64]chan message),
		children: make(map[uint64]chan<- exitStatus),
	}
}

// readLoop dispatches replies and exits until the socket closes. The
// init's end closes only when it exits, after everything it wrote, so no
// exit report is lost; children it never reported are marked lost.
func (c *initClient) readLoop() {
	buf, oob := make([]byte, maxMessage), make([]byte, unix.CmsgSpace(8*4))
	for {
		m, fds, err := readMsg(c.conn, buf, oob)
		closeFds(fds)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.mu.Lock()
			held, parked := c.held, c.parked
			c.mu.Unlock()
			if held != nil {
				close(parked)
				<-held
				continue
			}
		}
		if err != nil {
			break
		}
		c.mu.Lock()
		switch m.Op {
		case opExited:
			if ch, ok := c.children[m.Child]; ok {
				delete(c.children, m.Child)
				ch <- exitStatus{ws: unix.WaitStatus(m.Status), at: time.Now()}
			}
		default:
			if ch, ok := c.pending[m.Seq]; ok {
				delete(c.pending, m.Seq)
				ch <- m
			}
		}
		c.mu.Unlock()
	}
	c.conn.Close()
	c.mu.Lock()
	c.dead = true
	for seq, ch := range c.pending {
		ch <- message{Op: opError, Err: ErrSandboxGone.Error()}
		delete(c.pending, seq)
	}
	for key, ch := range c.children {
		ch <- exitStatus{lost: true, at: time.Now()}
		delete(c.children, key)
	}
	c.mu.Unlock()
	close(c.gone)
}

// hold stops readLoop between two messages, for a hand-over: what the
// init reports from then on waits in the socket for whoever reads it
// next, this process or the binary that adopts the socket. release
// lets readLoop go on. A dead init's readLoop has already returned.
func (c *initClient) hold() (release func()) {
	if c.conn == nil { // adopted dead: no reader
		return func() {}
	}
	held, parked := make(chan struct{}), make(chan struct{})
	c.mu.Lock()
	c.held, c.parked = held, parked
	c.mu.Unlock()
	// A deadline in the past wakes a read under way and fails the next,
	// without consuming a message.
	_ = c.conn.f.SetReadDeadline(time.Unix(1, 0))
	select {
	case <-parked:
	case <-c.gone:
	}
	return func() {
		_ = c.conn.f.SetReadDeadline(time.Time{})
		c.mu.Lock()
		c.held, c.parked = nil, nil
		c.mu.Unlock()
		close(held)
	}
}

// tracks reports whether the init's exit report for child is still to
// come (not yet read, or not yet sent).
func (c *initClient) tracks(child uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.children[child]
	return ok
}

// call sends a request and waits for its reply. If ctx ends first the
// request may still be carried out.
func (c *initClient) call(ctx context.Context, m *message, fds ...int) (message, error) {
	ch := make(chan message, 1)
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return message{}, ErrSandboxGone
	}
	c.seq++
	m.Seq = c.seq
	c.pending[m.Seq] = ch
	c.mu.Unlock()

	c.wmu.Lock()
	err := writeMsg(c.conn, m, fds...)
	c.wmu.Unlock()
	if err != nil {
		c.mu.Lock()
		delete(c.pending, m.Seq)
		c.mu.Unlock()
		if c.isDead() {
			return message{}, ErrSandboxGone
		}
		return message{}, fmt.Errorf("sending %s to the sandbox init: %w", m.Op, err)
	}
	select {
	case r := <-ch:
		if r.Op == opError {
			if r.Err == ErrSandboxGone.Error() {
				return r, ErrSandboxGone
			}
			if r.Err == ErrProcessDone.Error() {
				return r, ErrProcessDone
			}
			return r, errors.New(r.Err)
		}
		return r, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, m.Seq)
		c.mu.Unlock()
		return message{}, ctx.Err()
	}
}

func (c *initClient) isDead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

// start asks the init to fork spec as child; exitCh (capacity 1) gets the
// exit. It returns the host pid, or 0 when it could not be learnt. It
// waits for the reply whatever happens (but the init's death): giving up
// early could leave a program running that nobody tracks.
func (c *initClient) start(child uint64, spec *spawnSpec, stdout, stderr *os.File, extra []int, exitCh chan<- exitStatus) (int, error) {
	out, errf, closeStdio, err := stdioFds(stdout, stderr)
	if err != nil {
		return 0, err
	}
	defer closeStdio()
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return 0, ErrSandboxGone
	}
	c.children[child] = exitCh // before the request: the exit may beat the reply
	c.mu.Unlock()
	r, err := c.call(context.Background(), &message{Op: opStart, Child: child, Spec: spec}, append([]int{out, errf}, extra...)...)
	if err != nil {
		c.mu.Lock()
		delete(c.children, child)
		c.mu.Unlock()
		return 0, err
	}
	if !c.pidNS {
		return r.Pid, nil
	}
	return hostPid(c.pid, r.Pid), nil
}

// stdioFds returns fds for a child's stdout and stderr, /dev/null for nil.
func stdioFds(stdout, stderr *os.File) (int, int, func(), error) {
	var null *os.File
	fd := func(f *os.File) (int, error) {
		if f != nil {
			return int(f.Fd()), nil
		}
		if null == nil {
			var err error
			if null, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
				return -1, err
			}
		}
		return int(null.Fd()), nil
	}
	done := func() {
		if null != nil {
			null.Close()
		}
	}
	out, err := fd(stdout)
	if err != nil {
		return 0, 0, done, err
	}
	errf, err := fd(stderr)
	if err != nil {
		done()
		return 0, 0, done, err
	}
	return out, errf, done, nil
}

// hostPid finds the host pid of the init's child whose pid inside the
// init's namespace is nsPid: the init's children are listed in
// /proc/<init>/task/*/children, and /proc/<pid>/status NSpid ends with the
// innermost pid. It returns 0 if the child is already gone.
func hostPid(initPid, nsPid int) int {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", initPid))
	if err != nil {
		return 0
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", initPid, t.Name()))
		if err != nil {
			continue
		}
		for f := range strings.FieldsSeq(string(b)) {
			pid, err := strconv.Atoi(f)
			if err == nil && innermostPid(pid) == nsPid {
				return pid
			}
		}
	}
	return 0
}

func innermostPid(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "NSpid:"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 0 {
				return 0
			}
			n, _ := strconv.Atoi(fields[len(fields)-1])
			return n
		}
	}
	return 0
}
