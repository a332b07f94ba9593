package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/internal/version"
	"github.com/supervise-dev/supervise/logs"
	"github.com/supervise-dev/supervise/metrics"
	"github.com/supervise-dev/supervise/proc"
	"github.com/supervise-dev/supervise/supervisor"
)

// An upgrade in place: supervise execs the binary now at its own path in
// the same process, and the new binary takes over every running program
// (execve keeps the pid and the children). The old process checks the new
// binary first (upgrade-probe), freezes the supervisor and the runtime,
// writes the state to a sealed memfd, clears close-on-exec on exactly the
// descriptors the state names, and execs. The new process reads the
// state from the descriptor named in $SUPERVISE_UPGRADE; if it cannot
// take over, it execs the old binary again (kept open for that), which
// takes the same state back and reports the failure.

// handoverFormat is the version of the state format this binary writes.
// A string, so that a test build can claim another one. Format 2 added
// the running config, notify channels, terminals, probe and schedule
// state; a binary that writes it reads format 1 too (those parts absent:
// the config is read from the file, probes and timers start afresh, as
// format 1's binaries did), but a format-1 binary cannot take over a
// format-2 state, so its probe refuses such a downgrade.
var handoverFormat = "2"

// readsFormat says whether this binary takes over a state of format f.
func readsFormat(f string) bool {
	return f == handoverFormat || f == "1"
}

// readFormats lists the formats readsFormat accepts, for the probe.
func readFormats() string {
	if handoverFormat == "1" {
		return "1"
	}
	return "1," + handoverFormat
}

// takeoverFault, set only by a test build (-ldflags -X), makes this
// binary refuse every state it inherits: the tests' way to see the old
// binary take its programs back after the exec.
var takeoverFault = ""

// takeoverDelay, set only by a test build (-ldflags -X, a duration),
// makes this binary wait that long before it reads the state it
// inherits: an exec as slow as on a heavily loaded machine.
var takeoverDelay = ""

// Names and limits of the hand-over.
const (
	upgradeEnv        = "SUPERVISE_UPGRADE"        // STATEFD,OLDEXEFD
	upgradeFailedEnv  = "SUPERVISE_UPGRADE_FAILED" // why the new binary gave up, for the old one
	probeMagic        = "supervise-upgrade-probe"
	maxStateBytes     = 256 << 20
	maxProbeOutput    = 4 << 10
	probeTimeout      = 30 * time.Second
	freezeTimeout     = 30 * time.Second
	maxUpgradeRecords = 20
	// commandsEndWait bounds the wait for the commands under way to
	// write their last reply before the exec.
	commandsEndWait = 5 * time.Second
)

// upgradeState is what crosses the exec.
type upgradeState struct {
	Format     string              `json:"format"`
	From       string              `json:"from"` // the version of the binary that wrote it
	Generation int                 `json:"generation"`
	Upgrades   []ctl.UpgradeRecord `json:"upgrades,omitempty"`
	ControlFD  int                 `json:"control_fd"`
	HTTPFD     int                 `json:"http_fd"` // -1: no HTTP listener
	Runtime    proc.Snapshot       `json:"runtime"`
	Supervisor supervisor.Handover `json:"supervisor"`
	Failed     string              `json:"-"`
	files      map[int]*os.File    // the descriptors named and checked, not yet taken
	keep       map[int]*os.File    // memfd and old binary, for a fallback
	fds        []int               // every descriptor inherited, for a fallback
}

// upgradeProbeMain is `supervise upgrade-probe`: the old binary runs it
// before an upgrade to learn that this one starts at all, and which state
// formats it reads.
func upgradeProbeMain() int {
	fmt.Printf("%s version=%s formats=%s\n", probeMagic, version.Version, readFormats())
	return 0
}

// probeResult is what a new binary said of itself.
type probeResult struct {
	version string
	formats []string
}

// parseProbe reads the one line of upgrade-probe's output.
func parseProbe(out []byte) (probeResult, error) {
	line, _, _ := bytes.Cut(out, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) != 3 || f[0] != probeMagic {
		return probeResult{}, fmt.Errorf("it does not answer upgrade-probe (said %q)", truncate(string(line), 120))
	}
	var r probeResult
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "version":
			r.version = v
		case "formats":
			r.formats = strings.Split(v, ",")
		}
	}
	if r.version == "" || len(r.formats) == 0 {
		return probeResult{}, fmt.Errorf("its upgrade-probe answer %q is incomplete", truncate(string(line), 120))
	}
	return r, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// upgrader serves the upgrade and version verbs and SIGUSR2 for a run.
type upgrader struct {
	rt  *proc.Runtime
	sup *supervisor.Supervisor
	srv *ctl.Server
	ms  *metrics.Server
	log *slog.Logger
	// flushLog writes what the log has queued: the exec would drop it.
	flushLog func()
	// stopping ends when supervise begins to stop (SIGTERM, shutdown): an
	// upgrade not executed by then is given up, or the new binary would
	// run on with the stop lost in the old one.
	stopping context.Context

	mu sync.Mutex // one upgrade at a time, held from the probe to the exec
	// recMu guards what version reports; never held for long, so that
	// version answers while an upgrade holds mu (a command blocked until
	// the exec would lose its connection). Written with mu held too.
	recMu      sync.Mutex
	generation int
	records    []ctl.UpgradeRecord
}

// backend is the control server's backend: the supervisor, and the
// upgrade verbs.
type backend struct {
	*supervisor.Supervisor
	*upgrader
}

// Version is the version verb.
func (u *upgrader) Version(context.Context) (ctl.VersionInfo, error) {
	u.recMu.Lock()
	defer u.recMu.Unlock()
	exe, _ := os.Readlink("/proc/self/exe")
	return ctl.VersionInfo{Version: version.Version, Pid: os.Getpid(), Exe: exe, Upgrades: append([]ctl.UpgradeRecord(nil), u.records...)}, nil
}

// record adds the outcome of an upgrade of generation gen (under u.mu).
func (u *upgrader) record(gen int, r ctl.UpgradeRecord) {
	u.recMu.Lock()
	defer u.recMu.Unlock()
	u.generation = gen
	r.Generation = gen
	u.records = append(u.records, r)
	if len(u.records) > maxUpgradeRecords {
		u.records = u.records[len(u.records)-maxUpgradeRecords:]
	}
}

// newBinaryPath is the path the running binary was started from, where a
// package upgrade puts the new one: /proc/self/exe, read now, says
// "(deleted)" after the file was replaced by a rename.
func newBinaryPath() (string, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return "", fmt.Errorf("reading /proc/self/exe: %w", err)
	}
	return strings.TrimSuffix(exe, " (deleted)"), nil
}

// probe runs `path upgrade-probe` through the runtime (its reaper owns
// every wait) and checks the answer.
func (u *upgrader) probe(ctx context.Context, path string) (probeResult, error) {
	if err := unix.Access(path, unix.X_OK); err != nil {
		return probeResult{}, fmt.Errorf("new binary %s is not executable: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	sid, err := u.rt.CreateSandbox(ctx, proc.SandboxConfig{Name: "upgrade-probe", NoCgroup: true})
	if err != nil {
		return probeResult{}, fmt.Errorf("running the new binary: %w", err)
	}
	defer u.rt.DeleteSandbox(context.Background(), sid)
	var out, errOut limitedBuffer
	out.max, errOut.max = maxProbeOutput, maxProbeOutput
	res, err := u.rt.Exec(ctx, sid, proc.ExecConfig{Args: []string{path, "upgrade-probe"}, Stdout: &out, Stderr: &errOut})
	switch {
	case err != nil:
		return probeResult{}, fmt.Errorf("new binary %s: %w", path, err)
	case res.TimedOut:
		return probeResult{}, fmt.Errorf("new binary %s: upgrade-probe did not answer within %s", path, probeTimeout)
	case res.ExitCode != 0:
		return probeResult{}, fmt.Errorf("new binary %s exited at once (status %d, signal %d): %s", path, res.ExitCode, res.Signal, truncate(strings.TrimSpace(errOut.String()), 200))
	}
	r, err := parseProbe(out.Bytes())
	if err != nil {
		return probeResult{}, fmt.Errorf("new binary %s: %w", path, err)
	}
	for _, f := range r.formats {
		if f == handoverFormat {
			return r, nil
		}
	}
	return probeResult{}, fmt.Errorf("new binary %s (version %s) reads state formats %s, not this one's (%s)", path, r.version, strings.Join(r.formats, ","), handoverFormat)
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Upgrade is the upgrade verb: everything up to the exec, which commit
// does. An error means nothing changed.
func (u *upgrader) Upgrade(ctx context.Context) (ctl.UpgradeStarted, func(), error) {
	if !u.mu.TryLock() {
		return ctl.UpgradeStarted{}, nil, errors.New("an upgrade is under way")
	}
	started, commit, err := u.prepare(ctx)
	if err != nil {
		u.record(u.generation+1, ctl.UpgradeRecord{From: version.Version, At: time.Now(), Error: err.Error()})
		u.mu.Unlock()
		u.log.Error("upgrade refused; nothing changed", "err", err)
		u.sup.Note("", "upgrade refused, nothing changed: "+err.Error())
		return ctl.UpgradeStarted{}, nil, err
	}
	return started, commit, nil
}

// prepare checks the new binary, freezes, and writes the state (u.mu held).
func (u *upgrader) prepare(ctx context.Context) (ctl.UpgradeStarted, func(), error) {
	path, err := newBinaryPath()
	if err != nil {
		return ctl.UpgradeStarted{}, nil, err
	}
	pr, err := u.probe(ctx, path)
	if err != nil {
		return ctl.UpgradeStarted{}, nil, err
	}
	// The old binary, open before anything is frozen, for the new one to
	// come back to.
	oldExe, err := os.OpenFile("/proc/self/exe", os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ctl.UpgradeStarted{}, nil, fmt.Errorf("keeping the old binary open: %w", err)
	}
	var undo []func()
	undoAll := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	undo = append(undo, func() { oldExe.Close() })
	fail := func(err error) (ctl.UpgradeStarted, func(), error) {
		undoAll()
		return ctl.UpgradeStarted{}, nil, err
	}
	fctx, cancel := context.WithTimeout(ctx, freezeTimeout)
	defer cancel()
	frozen, err := u.sup.Freeze(fctx)
	if err != nil {
		return fail(fmt.Errorf("freezing the supervisor: %w", err))
	}
	undo = append(undo, frozen.Thaw)
	snap, thawRuntime, err := u.rt.Freeze(fctx)
	if err != nil {
		return fail(fmt.Errorf("freezing the runtime: %w", err))
	}
	undo = append(undo, thawRuntime)

	st := upgradeState{Format: handoverFormat, From: version.Version, Generation: u.generation + 1,
		Upgrades: u.records, HTTPFD: -1, Runtime: snap, Supervisor: frozen.State}
	inherit := append(append([]*os.File(nil), frozen.Files...), snap.Files()...)
	ctlFile, err := u.srv.ListenerFile()
	if err != nil {
		return fail(err)
	}
	undo = append(undo, func() { ctlFile.Close() })
	st.ControlFD = fdsOf([]*os.File{ctlFile})[0]
	inherit = append(inherit, ctlFile)
	if u.ms != nil {
		hf, err := u.ms.ListenerFile()
		if err != nil {
			return fail(err)
		}
		undo = append(undo, func() { hf.Close() })
		st.HTTPFD = fdsOf([]*os.File{hf})[0]
		inherit = append(inherit, hf)
	}
	data, err := json.Marshal(&st)
	if err != nil {
		return fail(fmt.Errorf("encoding the state: %w", err))
	}
	mem, err := writeSealed(data)
	if err != nil {
		return fail(err)
	}
	undo = append(undo, func() { mem.Close() })
	inherit = append(inherit, mem, oldExe)

	started := ctl.UpgradeStarted{From: version.Version, Pid: os.Getpid(), Generation: st.Generation}
	commit := func() {
		defer u.mu.Unlock()
		u.log.Info("upgrading: executing the new binary", "path", path, "from", version.Version, "to", pr.version, "generation", st.Generation)
		env := append(withoutEnv(os.Environ(), upgradeEnv, upgradeFailedEnv),
			fmt.Sprintf("%s=%d,%d", upgradeEnv, mem.Fd(), oldExe.Fd()))
		// The commands under way end saying why, so that their clients
		// go on with the new binary instead of losing the connection.
		stopping := u.stopping
		if stopping == nil { // an upgrader outside a run (tests)
			stopping = context.Background()
		}
		u.srv.EndCommandsForUpgrade(stopping, commandsEndWait)
		u.flushQueuedLog()
		var err error
		// Checked last, right before the exec: a stop asked during the
		// waits above is the old binary's to carry out.
		if err = context.Cause(stopping); err == nil {
			err = execFrom(startDir, path, os.Args, env, fdsOf(inherit))
		}
		// Still here: nothing was replaced.
		u.srv.ResumeCommands()
		undoAll()
		if context.Cause(stopping) != nil {
			msg := "upgrade given up: supervise is stopping"
			u.record(st.Generation, ctl.UpgradeRecord{From: version.Version, At: time.Now(), Error: msg})
			u.log.Warn(msg, "to", pr.version)
			return
		}
		msg := fmt.Sprintf("executing the new binary %s: %v", path, err)
		u.record(st.Generation, ctl.UpgradeRecord{From: version.Version, At: time.Now(), Error: msg})
		u.log.Error("upgrade failed; the old binary carries on", "err", msg)
		u.sup.Note("", "upgrade failed, the old binary carries on: "+msg)
	}
	return started, commit, nil
}

// logFlushWait bounds the wait for the log's queue before the exec: a
// reader of supervise's output that has stopped reading must not hold an
// upgrade up (its lines are then lost, as they would be anyway).
const logFlushWait = 5 * time.Second

// flushQueuedLog writes the log's queue (bounded by logFlushWait).
func (u *upgrader) flushQueuedLog() {
	if u.flushLog == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		u.flushLog()
	}()
	select {
	case <-done:
	case <-time.After(logFlushWait):
	}
}

// fdsOf lists the descriptors of files, without os.File.Fd's switch to
// blocking mode.
func fdsOf(files []*os.File) []int {
	var fds []int
	for _, f := range files {
		if rc, err := f.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { fds = append(fds, int(fd)) })
		}
	}
	return fds
}

// execInheriting execs path with the close-on-exec flag cleared on fds
// only; it returns only when the exec failed, the flags set again.
func execInheriting(path string, argv, env []string, fds []int) error {
	for _, fd := range fds {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
			setCloexec(fds)
			return fmt.Errorf("passing descriptor %d: %w", fd, err)
		}
	}
	// The exec runs on this thread, which carries the parent-death signal
	// over (see keepParentDeathSignal); the thread stays locked only if
	// the exec failed and returned.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	keepParentDeathSignal()
	err := unix.Exec(path, argv, env)
	setCloexec(fds)
	return err
}

// startDir is the working directory supervise run was started in, before
// --root: the command line means the same from there.
var startDir string

// execFrom is execInheriting run from dir ("" the current one): the new
// binary parses the same command line, whose --root and relative paths
// are relative to where supervise was started.
func execFrom(dir, path string, argv, env []string, fds []int) error {
	cwd, err := os.Getwd()
	if dir != "" && err == nil && dir != cwd {
		if err := os.Chdir(dir); err != nil {
			return fmt.Errorf("returning to %s: %w", dir, err)
		}
		defer os.Chdir(cwd) // the exec failed: back where we run
	}
	return execInheriting(path, argv, env, fds)
}

func setCloexec(fds []int) {
	for _, fd := range fds {
		unix.CloseOnExec(fd)
	}
}

func withoutEnv(env []string, names ...string) []string {
	out := env[:0:0]
outer:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue outer
			}
		}
		out = append(out, kv)
	}
	return out
}

// inheritedUpgrade reads the state an old binary left in $SUPERVISE_UPGRADE,
// nil when there is none. The variable is removed, so no program sees it.
// An error means the state is there but cannot be taken over: the caller
// goes back to the old binary (fallBack).
func inheritedUpgrade() (*upgradeState, error) {
	v, ok := os.LookupEnv(upgradeEnv)
	if !ok {
		return nil, nil
	}
	failed := os.Getenv(upgradeFailedEnv)
	os.Unsetenv(upgradeEnv)
	os.Unsetenv(upgradeFailedEnv)
	st := &upgradeState{Failed: failed, keep: map[int]*os.File{}}
	a, b, _ := strings.Cut(v, ",")
	memFD, err1 := strconv.Atoi(a)
	exeFD, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || memFD < 3 || exeFD < 3 || memFD == exeFD {
		return st, fmt.Errorf("$%s=%q: want two descriptors", upgradeEnv, v)
	}
	st.keep[memFD] = os.NewFile(uintptr(memFD), "supervise-upgrade-state")
	st.keep[exeFD] = os.NewFile(uintptr(exeFD), "supervise-old-binary")
	st.fds = []int{memFD, exeFD}
	if d, err := time.ParseDuration(takeoverDelay); err == nil && failed == "" {
		time.Sleep(d)
	}
	if err := readState(st.keep[memFD], st); err != nil {
		return st, err
	}
	if takeoverFault != "" && failed == "" {
		return st, errors.New("refusing the take-over: " + takeoverFault)
	}
	return st, nil
}

// readState decodes and checks the state: it comes from another binary,
// so every size is bounded and every descriptor checked before use.
func readState(f *os.File, st *upgradeState) error {
	var fi unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &fi); err != nil {
		return fmt.Errorf("reading the state: %w", err)
	}
	if fi.Size > maxStateBytes {
		return fmt.Errorf("the state is %d bytes, at most %d", fi.Size, maxStateBytes)
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, maxStateBytes))
	if err != nil {
		return fmt.Errorf("reading the state: %w", err)
	}
	keep, failed, fds := st.keep, st.Failed, st.fds
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(st); err != nil {
		return fmt.Errorf("decoding the state: %w", err)
	}
	st.keep, st.Failed, st.fds = keep, failed, fds
	if !readsFormat(st.Format) {
		return fmt.Errorf("state format %q, this binary reads %s", st.Format, readFormats())
	}
	if st.Generation < 1 || len(st.Upgrades) > maxUpgradeRecords {
		return errors.New("the state's upgrade history is out of bounds")
	}
	st.files = map[int]*os.File{}
	want := func(fd int, kind uint32, what string) error {
		if fd < 3 || fd > 1<<20 || st.files[fd] != nil || keep[fd] != nil {
			return fmt.Errorf("%s: descriptor %d is out of range or named twice", what, fd)
		}
		var s unix.Stat_t
		if err := unix.Fstat(fd, &s); err != nil {
			return fmt.Errorf("%s: descriptor %d: %w", what, fd, err)
		}
		if uint32(s.Mode)&unix.S_IFMT != kind {
			return fmt.Errorf("%s: descriptor %d is not the right kind of file", what, fd)
		}
		st.files[fd] = os.NewFile(uintptr(fd), what)
		st.fds = append(st.fds, fd)
		return nil
	}
	if err := want(st.ControlFD, unix.S_IFSOCK, "control socket"); err != nil {
		return err
	}
	if st.HTTPFD != -1 {
		if err := want(st.HTTPFD, unix.S_IFSOCK, "HTTP listener"); err != nil {
			return err
		}
	}
	for _, sk := range st.Supervisor.Sockets {
		if err := want(sk.FD, unix.S_IFSOCK, "listen socket "+sk.Key); err != nil {
			return err
		}
	}
	for _, sb := range st.Runtime.Sandboxes {
		if sb.Init != nil && sb.Init.FD != -1 {
			if err := want(sb.Init.FD, unix.S_IFSOCK, "sandbox init socket of "+sb.ID); err != nil {
				return err
			}
		}
	}
	for _, in := range st.Supervisor.Instances {
		for _, p := range in.Pipes {
			if !p.Tty {
				if err := want(p.FD, unix.S_IFIFO, "output pipe of "+in.Key); err != nil {
					return err
				}
				continue
			}
			// A pseudo-terminal's master: a character device, and of all
			// of them only a master answers as one.
			if err := want(p.FD, unix.S_IFCHR, "terminal of "+in.Key); err != nil {
				return err
			}
			if err := logs.CheckPtyMaster(p.FD); err != nil {
				return fmt.Errorf("terminal of %s: %w", in.Key, err)
			}
		}
		if n := in.Notify; n != nil {
			// The supervisor checks the socket further (a unix datagram
			// socket bound to the path named) before it takes it.
			if n.SocketFD != 0 {
				if err := want(n.SocketFD, unix.S_IFSOCK, "notify socket of "+in.Key); err != nil {
					return err
				}
			}
			if n.PipeFD != 0 {
				if err := want(n.PipeFD, unix.S_IFIFO, "notify pipe of "+in.Key); err != nil {
					return err
				}
			}
		}
	}
	for fd := range st.files {
		unix.CloseOnExec(fd)
	}
	return nil
}

// controlFile is the inherited control socket.
func (st *upgradeState) controlFile() *os.File { return st.files[st.ControlFD] }

func (st *upgradeState) httpListener() (net.Listener, error) {
	if st.HTTPFD == -1 {
		return nil, nil
	}
	// A copy: the descriptor itself stays until the take-over is done,
	// for a fall-back to pass on.
	ln, err := net.FileListener(st.files[st.HTTPFD])
	if err != nil {
		return nil, fmt.Errorf("adopting the HTTP listener: %w", err)
	}
	return ln, nil
}

// fallBack execs the old binary again with the same state, when this one
// cannot take over: the programs stay as they are, and the old binary
// reports why. It returns only when that exec failed too.
func (st *upgradeState) fallBack(cause error) error {
	var exeFD, memFD int
	for fd, f := range st.keep {
		if f.Name() == "supervise-old-binary" {
			exeFD = fd
		} else {
			memFD = fd
		}
	}
	env := append(withoutEnv(os.Environ(), upgradeEnv, upgradeFailedEnv),
		fmt.Sprintf("%s=%d,%d", upgradeEnv, memFD, exeFD),
		upgradeFailedEnv+"="+truncate(strings.ReplaceAll(cause.Error(), "\n", " "), 1000))
	return execFrom(startDir, "/proc/self/fd/"+strconv.Itoa(exeFD), os.Args, env, st.fds)
}

// adopted finishes a take-over: the old binary's descriptors closed, the
// upgrade said, the config file reloaded (reload, nil when there is
// none to do), and the upgrade recorded with the reload's outcome.
func (st *upgradeState) adopted(u *upgrader, reload func() (supervisor.Changes, error)) {
	for _, f := range st.keep {
		f.Close()
	}
	for _, f := range st.files {
		f.Close() // what nobody adopted
	}
	rec := ctl.UpgradeRecord{Generation: st.Generation, From: st.From, To: version.Version, At: time.Now()}
	msg := fmt.Sprintf("upgraded supervise from %s to %s in place (pid %d); every program kept", st.From, version.Version, os.Getpid())
	if st.Failed != "" {
		rec.To, rec.Error = "", "the new binary could not take over: "+st.Failed
		msg = fmt.Sprintf("upgrade failed, supervise %s is back with every program: %s", version.Version, st.Failed)
		u.log.Error("upgrade failed; the old binary took its programs back", "err", st.Failed)
	} else {
		u.log.Info("upgraded in place", "from", st.From, "to", version.Version, "pid", os.Getpid())
	}
	u.sup.Note("", msg)
	if reload != nil && st.Failed == "" {
		// The programs are ours, under the config they were started with:
		// now the file, as SIGHUP would read it.
		if changes, err := reload(); err != nil {
			rec.ReloadError = err.Error()
			u.log.Error("upgraded, but the config file could not be reloaded; the running config stays", "err", err)
		} else {
			rec.Reloaded = changes.String()
		}
	}
	u.mu.Lock()
	u.recMu.Lock()
	u.generation = st.Generation
	u.records = append(st.Upgrades, rec)
	if len(u.records) > maxUpgradeRecords {
		u.records = u.records[len(u.records)-maxUpgradeRecords:]
	}
	u.recMu.Unlock()
	u.mu.Unlock()
}

// upgradeOnSignal is SIGUSR2: an upgrade, as the verb does it; the
// outcome is logged and recorded as an event.
func (r *run) upgradeOnSignal() {
	if r.up == nil || r.up.srv == nil {
		return
	}
	r.log.Info("SIGUSR2: upgrading in place")
	_, commit, err := r.up.Upgrade(r.stop)
	if err == nil {
		commit()
	}
}

// giveBack is the end of a new binary that cannot take over: it execs the
// old one with the same state. Without an upgrade under way (st nil) it
// only fails the start.
func giveBack(st *upgradeState, cause error) int {
	if st == nil {
		return exitFailed
	}
	fmt.Fprintln(os.Stderr, "supervise: cannot take over from the previous binary:", cause)
	if st.Failed != "" || len(st.keep) < 2 {
		// The old binary itself could not take its programs back: nothing
		// is left to try. They run on, unsupervised, until they end.
		fmt.Fprintln(os.Stderr, "supervise: the previous binary failed too:", st.Failed)
		return exitFailed
	}
	err := st.fallBack(cause)
	fmt.Fprintln(os.Stderr, "supervise: executing the previous binary again:", err)
	return exitFailed
}

// upgradeWait bounds how long supervisectl upgrade waits for the outcome.
const upgradeWait = 2 * time.Minute

// ctlUpgrade is supervisectl upgrade: it asks, then asks version (the
// socket never stops listening; the new binary answers) until the
// upgrade's outcome is there.
func ctlUpgrade(ctx context.Context, e *ctlEnv) error {
	if len(e.names) > 0 {
		return usagef("upgrade takes no arguments")
	}
	started, err := e.client.Upgrade(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, upgradeWait)
	defer cancel()
	for {
		v, err := e.client.Version(ctx)
		if err == nil {
			for _, rec := range v.Upgrades {
				if rec.Generation != started.Generation {
					continue
				}
				if rec.Error != "" {
					return fmt.Errorf("upgrade failed, supervise %s carries on with every program: %s", v.Version, rec.Error)
				}
				if e.json {
					return json.NewEncoder(e.out).Encode(rec)
				}
				_, err := fmt.Fprintf(e.out, "upgraded: supervise %s → %s (pid %d, %s)%s\n", rec.From, rec.To, v.Pid, v.Exe, reloadOutcome(rec))
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("upgrade from %s: no outcome within %s (last error: %v)", started.From, upgradeWait, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// reloadOutcome is what an upgrade's line says of the reload after it.
func reloadOutcome(rec ctl.UpgradeRecord) string {
	switch {
	case rec.ReloadError != "":
		return "; config reload failed: " + rec.ReloadError
	case rec.Reloaded != "":
		return "; config reloaded: " + rec.Reloaded
	}
	return ""
}

// ctlVersion is supervisectl version.
func ctlVersion(ctx context.Context, e *ctlEnv) error {
	v, err := e.client.Version(ctx)
	if err != nil {
		return err
	}
	if e.json {
		return json.NewEncoder(e.out).Encode(v)
	}
	fmt.Fprintf(e.out, "supervise %s, pid %d, %s\n", v.Version, v.Pid, v.Exe)
	for _, r := range v.Upgrades {
		switch {
		case r.Error != "":
			fmt.Fprintf(e.out, "  upgrade %d at %s from %s: failed: %s\n", r.Generation, r.At.Format(time.RFC3339), r.From, r.Error)
		default:
			fmt.Fprintf(e.out, "  upgrade %d at %s: %s → %s%s\n", r.Generation, r.At.Format(time.RFC3339), r.From, r.To, reloadOutcome(r))
		}
	}
	return nil
}

// statusUpgradeLine ends status with the last upgrade, once there was one:
// the version before and after (or why it failed). A supervisor without
// the version verb (an older one) is said nothing of.
func statusUpgradeLine(ctx context.Context, e *ctlEnv) error {
	v, err := e.client.Version(ctx)
	if err != nil || len(v.Upgrades) == 0 {
		return nil
	}
	r := v.Upgrades[len(v.Upgrades)-1]
	at := r.At.Local().Format(time.DateTime)
	if r.Error != "" {
		_, err = fmt.Fprintf(e.out, "supervise %s (pid %d); upgrade at %s failed, nothing changed: %s\n", v.Version, v.Pid, at, r.Error)
	} else {
		// A reload that failed after it is worth a look: the file is not
		// what runs.
		failed := ""
		if r.ReloadError != "" {
			failed = reloadOutcome(r)
		}
		_, err = fmt.Fprintf(e.out, "supervise %s (pid %d), upgraded from %s at %s%s\n", v.Version, v.Pid, r.From, at, failed)
	}
	return err
}
