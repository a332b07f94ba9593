package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// ctlTimeout bounds one supervisectl call. The verbs wait for what they
// asked (stop waits out a stop_timeout of at most a few seconds), so a call
// still going after this long on even a crawling machine is a deadlock in
// the supervisor, and is reported as one.
const ctlTimeout = 3 * time.Minute

// supervisor is the `supervise run` under test.
type supervisor struct {
	dir, config, socket string
	logPath             string // its own log (stderr)
	cmd                 *exec.Cmd
	pid                 int
	started             time.Time // about when its Go runtime started (gctrace's clock)
	done                chan struct{}
	waitErr             error // set before done closes
}

// startSupervisor runs `supervise run -c config` in the soak's cgroup: a
// shell writes its own pid into every cgroup.procs of cg, then execs the
// supervisor, so the supervisor is in its cgroup before its first
// instruction and everything it starts is below it.
func startSupervisor(dir, config string, cg *soakCgroup) (*supervisor, error) {
	s := &supervisor{
		dir: dir, config: config,
		socket:  filepath.Join(dir, "supervise.sock"),
		logPath: filepath.Join(dir, "supervise.log"),
		done:    make(chan struct{}),
	}
	stderr, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	stdout, err := os.Create(filepath.Join(dir, "supervise.out"))
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	const script = `for f in $SOAK_CGROUP_PROCS; do echo $$ > "$f" || exit 111; done; unset SOAK_CGROUP_PROCS; exec "$@"`
	s.cmd = exec.Command("/bin/sh", "-c", script, "sh", binary, "run", "-c", config, "--socket", s.socket)
	s.cmd.Dir = dir
	s.cmd.Env = append(os.Environ(), "SOAK_CGROUP_PROCS="+strings.Join(cg.procsFiles(), " "),
		"GODEBUG=gctrace=1") // its live heap, from every collection: see gctrace_test.go
	s.cmd.Stdout, s.cmd.Stderr = stdout, stderr
	// SIGTERM should the test binary be killed, so that no supervise
	// outlives a soak cut short. The kernel sends it when the forking
	// thread ends: the fork comes from a goroutine that holds its locked
	// thread until supervise has exited.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	s.started = time.Now()
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("starting supervise: %w", err)
	}
	s.pid = s.cmd.Process.Pid
	return s, nil
}

func (s *supervisor) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// waitExit waits up to timeout for the supervisor to exit and returns its
// exit code.
func (s *supervisor) waitExit(timeout time.Duration) (int, error) {
	select {
	case <-s.done:
	case <-time.After(timeout):
		return 0, fmt.Errorf("supervise did not exit within %v", timeout)
	}
	var ee *exec.ExitError
	if errors.As(s.waitErr, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, s.waitErr
}

// kill ends the supervisor's process group at once: the cleanup of a run
// that failed.
func (s *supervisor) kill() {
	if !s.exited() {
		_ = syscall.Kill(-s.pid, syscall.SIGKILL)
		<-s.done
	}
}

// logTail returns the last n lines of the supervisor's own log, its GC
// trace left out.
func (s *supervisor) logTail(n int) string {
	b, _ := os.ReadFile(s.logPath)
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if !strings.HasPrefix(l, "gc ") && l != "GC forced" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ctlResult is one supervisectl call.
type ctlResult struct {
	out  string // stdout and stderr
	code int
}

// errCtlHung is a supervisectl call that did not return within ctlTimeout.
var errCtlHung = errors.New("supervisectl did not return")

// ctl runs supervisectl against the supervisor. Exit codes are returned,
// not judged; an error is a call that could not run or hung.
func (s *supervisor) ctl(args ...string) (ctlResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ctlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctlBinary, append([]string{"--socket", s.socket}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return ctlResult{out: out.String()}, fmt.Errorf("supervisectl %s: %w after %v: %s",
			strings.Join(args, " "), errCtlHung, ctlTimeout, threadStates(s.pid))
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ctlResult{out: out.String(), code: ee.ExitCode()}, nil
	case err != nil:
		return ctlResult{}, fmt.Errorf("running supervisectl %s: %w", strings.Join(args, " "), err)
	}
	return ctlResult{out: out.String()}, nil
}

// threadStates summarizes what the supervisor's threads are blocked in
// (wchan), the evidence we can get of a hang without a goroutine dump.
func threadStates(pid int) string {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return "supervisor gone"
	}
	count := map[string]int{}
	for _, e := range ents {
		w, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, e.Name()))
		count[string(w)]++
	}
	return fmt.Sprintf("supervisor threads by wchan: %v", count)
}

// programStatus is one entry of `supervisectl status --json`.
type programStatus struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Pid      int    `json:"pid"`
	Restarts int    `json:"restarts"`
	Message  string `json:"message"`
	LastExit *struct {
		Code   int    `json:"code"`
		Signal string `json:"signal"`
		Reason string `json:"reason"`
	} `json:"last_exit"`
}

func (p programStatus) String() string {
	s := fmt.Sprintf("%s %s pid=%d restarts=%d", p.Name, p.State, p.Pid, p.Restarts)
	if p.Message != "" {
		s += fmt.Sprintf(" message=%q", p.Message)
	}
	if e := p.LastExit; e != nil {
		s += fmt.Sprintf(" last_exit=(%d %s %s)", e.Code, e.Signal, e.Reason)
	}
	return s
}

// status returns `supervisectl status --json` by name.
func (s *supervisor) status() (map[string]programStatus, error) {
	r, err := s.ctl("status", "--json")
	if err != nil {
		return nil, err
	}
	if r.code != 0 {
		return nil, fmt.Errorf("supervisectl status: exit %d: %s", r.code, strings.TrimSpace(r.out))
	}
	return parseStatus(r.out)
}

func parseStatus(out string) (map[string]programStatus, error) {
	var list []programStatus
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, fmt.Errorf("decoding status --json: %w", err)
	}
	m := make(map[string]programStatus, len(list))
	for _, p := range list {
		m[p.Name] = p
	}
	return m, nil
}

// sample is the supervisor's own resource use at one moment.
type sample struct {
	rssKiB, threads, fds int
	fdKinds              map[string]int
}

func (s *supervisor) sample() sample {
	total, kinds, _ := fdKinds(s.pid)
	return sample{rssKiB: statusField(s.pid, "VmRSS"), threads: statusField(s.pid, "Threads"), fds: total, fdKinds: kinds}
}
