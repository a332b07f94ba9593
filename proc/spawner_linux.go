package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The spawner is this binary re-executed in the "spawner" role: a small
// process that holds a handful of descriptors and forks programs on the
// runtime's behalf. A fork copies the forking process's descriptor
// table and an exec closes its close-on-exec entries one by one; the
// runtime holds two pipe ends per program, so forking from it costs the
// size of the fleet per start. The spawner forks with CLONE_PARENT: the
// program is the runtime's child, reaped and signalled exactly as one
// forked directly (see doc.go).
//
// Protocol: one JSON spawnRequest per SOCK_SEQPACKET packet, its
// descriptors (stdio, extra files, the cgroup directory) attached with
// SCM_RIGHTS; one spawnReply back. The spawner is a remote
// syscall.ForkExec: the runtime lays out the child's table, the spawner
// only forks.

// spawnerThreshold is the descriptor number past which starts go through
// the spawner (SpawnerAuto). bench/scale/forkcost puts the break-even of
// a bare fork between 1,000 and 2,000 descriptors held; a start through
// the spawner also pays its round trip and the detach's thread hop, and
// in bench/scale (N=1,000, about 2,000 descriptors, the spawner past
// 1,024) cold start was slower with it than without, where at N=9,000 it
// was a third faster: a direct fork stays the cheaper well past 2,000.
const spawnerThreshold = 4096

// spawnerMaxFds bounds the descriptors one request passes (the kernel
// takes at most 253 in one SCM_RIGHTS message).
const spawnerMaxFds = 250

// spawnerTimeout bounds one request: a spawner that does not answer is
// killed and the start fails rather than hanging with the reaper locked.
const spawnerTimeout = 10 * time.Second

type spawnRequest struct {
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir,omitempty"`
	// Files is the child's descriptor table: Files[i] is the index of the
	// passed descriptor that becomes its fd i, -1 closed.
	Files    []int      `json:"files"`
	Cred     *spawnCred `json:"cred,omitempty"`
	Setpgid  bool       `json:"setpgid,omitempty"`
	Ptrace   bool       `json:"ptrace,omitempty"`
	CgroupFD int        `json:"cgroup"` // index of the passed cgroup directory, -1 none
}

type spawnCred struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

type spawnReply struct {
	Pid   int    `json:"pid,omitempty"`
	Errno int    `json:"errno,omitempty"` // the fork's syscall.Errno
	Err   string `json:"err,omitempty"`   // a bad request
}

// errSpawnerDown: the request never reached a live spawner, so nothing
// was forked and the direct path may run it.
var errSpawnerDown = errors.New("spawner not running")

// errSpawnerLost: the spawner died after it was sent the request, so it
// may have forked the program. Safe to retry only where such a child
// cannot run the program: one under ptrace stops at its exec and is
// killed by the reaper (an unknown child in a ptrace stop); the stub
// waits for a spec that never comes.
var errSpawnerLost = errors.New("the spawner died during the request")

// spawnerClient is the runtime's side: it starts the spawner on first
// use, restarts it after its death, and passes requests.
type spawnerClient struct {
	log      *slog.Logger
	initPath string
	rp       *reaper
	mode     SpawnerMode
	high     atomic.Int64 // the highest descriptor number a start passed

	// thread runs functions on the OS thread that forked the spawner: the
	// parent of the spawner, and so (CLONE_PARENT) of every program it
	// forks; the tracer of those started under ptrace, which only that
	// thread may detach.
	thread chan func()
	stop   chan struct{}
	done   chan struct{}

	startMu sync.Mutex // one start of a spawner at a time
	mu      sync.Mutex // one request at a time; guards cur and closed
	cur     *spawnerProc
	closed  bool
	starts  atomic.Int64 // spawner processes started
}

type spawnerProc struct {
	pid    int
	conn   int
	exited atomic.Bool // set by the reaper
}

func newSpawnerClient(log *slog.Logger, initPath string, rp *reaper, mode SpawnerMode) *spawnerClient {
	c := &spawnerClient{log: log, initPath: initPath, rp: rp, mode: mode,
		thread: make(chan func()), stop: make(chan struct{}), done: make(chan struct{})}
	go c.runThread()
	return c
}

// runThread owns the spawner's parent thread until close.
func (c *spawnerClient) runThread() {
	defer close(c.done)
	runtime.LockOSThread()
	// Never unlocked: the thread is the tracer of ptrace'd programs and
	// must not serve other goroutines in between; it ends with us.
	for {
		select {
		case f := <-c.thread:
			f()
		case <-c.stop:
			return
		}
	}
}

// onThread runs f on the spawner's parent thread and waits for it.
func (c *spawnerClient) onThread(f func()) {
	done := make(chan struct{})
	c.thread <- func() { f(); close(done) }
	<-done
}

// use says whether a start passing these descriptors goes through the
// spawner, and records them for SpawnerAuto.
func (c *spawnerClient) use(fds ...int) bool {
	if c == nil {
		return false
	}
	switch c.mode {
	case SpawnerNever:
		return false
	case SpawnerAlways:
		return true
	}
	hi := c.high.Load()
	for _, fd := range fds {
		if int64(fd) > hi {
			hi = int64(fd)
		}
	}
	for {
		old := c.high.Load()
		if hi <= old || c.high.CompareAndSwap(old, hi) {
			break
		}
	}
	return c.high.Load() > spawnerThreshold
}

// ready starts the spawner when none runs. It must be called outside the
// reaper's lock (the spawner's own fork takes it).
func (c *spawnerClient) ready() error {
	// Lock order: startMu, then the reaper's lock (its spawn) or mu;
	// forkExec takes mu inside the reaper's lock, so mu is never held
	// here while the reaper's lock is taken.
	c.startMu.Lock()
	defer c.startMu.Unlock()
	c.mu.Lock()
	closed, cur := c.closed, c.cur
	if cur != nil && cur.exited.Load() {
		c.log.Warn("the spawner died; starting another", "pid", cur.pid)
		unix.Close(cur.conn)
		c.cur, cur = nil, nil
	}
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if cur != nil {
		return nil
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("spawner socket: %w", err)
	}
	defer unix.Close(fds[1])
	tv := unix.NsecToTimeval(spawnerTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fds[0], unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fds[0])
		return fmt.Errorf("spawner socket: %w", err)
	}
	p := &spawnerProc{conn: fds[0]}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		unix.Close(fds[0])
		return err
	}
	defer null.Close()
	pid, err := c.rp.spawn(func() (int, error) {
		var pid int
		var err error
		c.onThread(func() {
			pid, err = syscall.ForkExec(c.initPath, []string{initArgv0, roleSpawner}, &syscall.ProcAttr{
				Env:   []string{"GOMAXPROCS=1"},
				Files: []uintptr{null.Fd(), null.Fd(), 2, uintptr(fds[1])},
				// Its own group: a terminal's ^C is for the programs' groups
				// and ours, and killing it costs a restart.
				Sys: &syscall.SysProcAttr{Setpgid: true},
			})
		})
		return pid, err
	}, func(ws unix.WaitStatus) {
		if ws.Exited() || ws.Signaled() {
			p.exited.Store(true)
		}
	})
	if err != nil {
		unix.Close(fds[0])
		return fmt.Errorf("starting the spawner %s: %w", c.initPath, err)
	}
	p.pid = pid
	c.mu.Lock()
	c.cur = p
	c.mu.Unlock()
	c.starts.Add(1)
	return nil
}

// forkExec is syscall.ForkExec done by the spawner. It runs inside
// reaper.spawn (the registry locked), like a direct fork. An error wrapping
// errSpawnerDown means nothing was forked, errSpawnerLost that something
// may have been; an Errno is the fork's own.
func (c *spawnerClient) forkExec(path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.cur
	if p == nil || p.exited.Load() {
		return 0, errSpawnerDown
	}
	req, fds, err := spawnRequestOf(path, argv, attr)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errSpawnerDown, err)
	}
	b, err := json.Marshal(req)
	if err == nil && len(b) > maxMessage {
		err = fmt.Errorf("request of %d bytes", len(b))
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errSpawnerDown, err)
	}
	if err := unix.Sendmsg(p.conn, b, unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL); err != nil {
		// Not sent (a dead peer, or too large a packet): nothing forked.
		return 0, fmt.Errorf("%w: sending: %v", errSpawnerDown, err)
	}
	var buf [4096]byte
	n, err := unix.Read(p.conn, buf[:])
	for errors.Is(err, unix.EINTR) {
		n, err = unix.Read(p.conn, buf[:])
	}
	if err != nil || n <= 0 {
		// The request was sent: the program may have been forked (the
		// caller judges whether such a child can run it).
		c.killLocked(p)
		if err == nil {
			err = errors.New("it exited")
		}
		return 0, fmt.Errorf("%w: %v", errSpawnerLost, err)
	}
	var rep spawnReply
	if err := json.Unmarshal(buf[:n], &rep); err != nil {
		c.killLocked(p)
		return 0, fmt.Errorf("%w: its answer: %v", errSpawnerLost, err)
	}
	switch {
	case rep.Err != "":
		return 0, fmt.Errorf("%w: %s", errSpawnerDown, rep.Err)
	case rep.Errno != 0:
		return 0, syscall.Errno(rep.Errno)
	case rep.Pid <= 0:
		return 0, fmt.Errorf("the spawner answered pid %d", rep.Pid)
	}
	return rep.Pid, nil
}

// killLocked kills a spawner that failed a request; the next start
// starts another. The reaper's lock is held (we are in its spawn), so
// the pid, unless its exit was seen, is not reaped and not reused.
func (c *spawnerClient) killLocked(p *spawnerProc) {
	if !p.exited.Load() {
		_ = unix.Kill(p.pid, unix.SIGKILL)
	}
	p.exited.Store(true)
}

// spawnRequestOf turns a ForkExec call into a request and the
// descriptors to pass. Only the SysProcAttr fields the runtime's direct
// forks use are supported.
func spawnRequestOf(path string, argv []string, attr *syscall.ProcAttr) (*spawnRequest, []int, error) {
	req := &spawnRequest{Path: path, Argv: argv, Env: attr.Env, Dir: attr.Dir, CgroupFD: -1}
	if req.Env == nil {
		req.Env = []string{}
	}
	var fds []int
	index := make(map[int]int)
	add := func(fd int) int {
		if i, ok := index[fd]; ok {
			return i
		}
		index[fd] = len(fds)
		fds = append(fds, fd)
		return len(fds) - 1
	}
	for _, f := range attr.Files {
		if f == ^uintptr(0) {
			req.Files = append(req.Files, -1)
			continue
		}
		req.Files = append(req.Files, add(int(f)))
	}
	if sys := attr.Sys; sys != nil {
		other := *sys
		other.Setpgid, other.Ptrace, other.UseCgroupFD, other.CgroupFD, other.Credential = false, false, false, 0, nil
		if !isZeroSysProcAttr(&other) {
			return nil, nil, errors.New("a fork attribute the spawner does not carry")
		}
		req.Setpgid, req.Ptrace = sys.Setpgid, sys.Ptrace
		if sys.UseCgroupFD {
			req.CgroupFD = add(sys.CgroupFD)
		}
		if cr := sys.Credential; cr != nil {
			if cr.NoSetGroups {
				return nil, nil, errors.New("NoSetGroups is not carried")
			}
			req.Cred = &spawnCred{UID: cr.Uid, GID: cr.Gid, Groups: cr.Groups}
		}
	}
	if len(fds) > spawnerMaxFds {
		return nil, nil, fmt.Errorf("%d descriptors, at most %d", len(fds), spawnerMaxFds)
	}
	return req, fds, nil
}

func isZeroSysProcAttr(s *syscall.SysProcAttr) bool {
	return s.Chroot == "" && !s.Setsid && !s.Setctty && !s.Noctty && s.Ctty == 0 && !s.Foreground &&
		s.Pgid == 0 && s.Pdeathsig == 0 && s.Cloneflags == 0 && s.Unshareflags == 0 &&
		s.UidMappings == nil && s.GidMappings == nil && s.AmbientCaps == nil && s.PidFD == nil
}

// is says whether pid is the running spawner.
func (c *spawnerClient) is(pid int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur != nil && c.cur.pid == pid && !c.cur.exited.Load()
}

// detach ends the ptrace of pid, a program the spawner forked: only its
// tracer, the spawner's parent thread, may.
func (c *spawnerClient) detach(pid int) error {
	var err error
	c.onThread(func() { err = unix.PtraceDetach(pid) })
	return err
}

// close stops the spawner (it exits when its socket closes) and the
// parent thread. The reaper must still run, to collect its exit.
func (c *spawnerClient) close() {
	if c == nil {
		return
	}
	c.startMu.Lock()
	defer c.startMu.Unlock()
	c.mu.Lock()
	c.closed = true
	p := c.cur
	c.cur = nil
	c.mu.Unlock()
	if p != nil {
		unix.Close(p.conn)
		deadline := time.Now().Add(5 * time.Second)
		for !p.exited.Load() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if !p.exited.Load() {
			_ = c.rp.kill(p.pid, false, unix.SIGKILL)
		}
	}
	close(c.stop)
	<-c.done
}

// spawnerMain is the spawner role: serve requests on fd 3 until it
// closes. It holds fds 0-2 and 3 only, all but the socket's duplicates
// close-on-exec, and each request's descriptors until its fork returned.
func spawnerMain() int {
	if err := CloseOnExecFrom(3); err != nil {
		fmt.Fprintln(os.Stderr, "supervise spawner:", err)
		return 1
	}
	const conn = 3
	buf := make([]byte, maxMessage)
	oob := make([]byte, unix.CmsgSpace(4*(spawnerMaxFds+3)))
	for {
		n, oobn, flags, _, err := unix.Recvmsg(conn, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return 0 // the runtime closed its end or died
		}
		fds := receivedFds(oob[:oobn])
		rep := serveSpawn(buf[:n], flags, fds)
		closeFds(fds)
		b, _ := json.Marshal(rep)
		if err := unix.Sendmsg(conn, b, nil, nil, unix.MSG_NOSIGNAL); err != nil {
			return 0
		}
	}
}

// serveSpawn forks one request. The request comes from our parent, but it
// is checked all the same: a malformed one is refused, never a crash.
func serveSpawn(b []byte, flags int, fds []int) spawnReply {
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		return spawnReply{Err: "request truncated"}
	}
	var req spawnRequest
	if err := json.Unmarshal(b, &req); err != nil {
		return spawnReply{Err: "decoding the request: " + err.Error()}
	}
	if req.Path == "" || len(req.Argv) == 0 || len(req.Files) < 3 || len(req.Files) > 1025 {
		return spawnReply{Err: "bad request"}
	}
	files := make([]uintptr, len(req.Files))
	for i, x := range req.Files {
		switch {
		case x == -1:
			files[i] = ^uintptr(0)
		case x >= 0 && x < len(fds):
			files[i] = uintptr(fds[x])
		default:
			return spawnReply{Err: fmt.Sprintf("descriptor %d of %d passed", x, len(fds))}
		}
	}
	sys := &syscall.SysProcAttr{Setpgid: req.Setpgid, Ptrace: req.Ptrace, Cloneflags: unix.CLONE_PARENT}
	if req.CgroupFD != -1 {
		if req.CgroupFD < 0 || req.CgroupFD >= len(fds) {
			return spawnReply{Err: "bad cgroup descriptor"}
		}
		sys.UseCgroupFD, sys.CgroupFD = true, fds[req.CgroupFD]
	}
	if req.Cred != nil {
		sys.Credential = &syscall.Credential{Uid: req.Cred.UID, Gid: req.Cred.GID, Groups: req.Cred.Groups}
	}
	pid, err := syscall.ForkExec(req.Path, req.Argv, &syscall.ProcAttr{Dir: req.Dir, Env: req.Env, Files: files, Sys: sys})
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) && errno != 0 {
			return spawnReply{Errno: int(errno)}
		}
		return spawnReply{Err: err.Error()}
	}
	return spawnReply{Pid: pid}
}
