// Package integration holds black-box tests of the built supervise binary:
// real processes, real signals, real cgroups.
package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	binary     string // the supervise binary built for this run
	initBinary string // and supervise-init, beside it
	ctlBinary  string // and supervisectl, a link to it
)

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == blockSignalsExec {
		blockSignalsAndExec(os.Args[2:])
	}
	flag.Parse()
	if testing.Short() {
		// Real processes on a loaded machine take minutes: `go test
		// -short ./...` is the quick pass over the unit tests.
		fmt.Println("integration: skipped under -short (real processes, minutes)")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "supervise-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = os.Chmod(dir, 0o755) // tests run the client as another uid too
	binary = filepath.Join(dir, "supervise")
	initBinary = filepath.Join(dir, "supervise-init")
	ctlBinary = filepath.Join(dir, "supervisectl")
	build := exec.Command("go", "build", "-o", dir+"/", "../cmd/supervise", "../cmd/supervise-init")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building supervise: %v\n%s", err, out)
		os.Exit(1)
	}
	if err := os.Symlink(binary, ctlBinary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// daemon is one running `supervise run`.
type daemon struct {
	t      *testing.T
	dir    string
	socket string
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine of exec and
// the test reading it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// writeConfig writes a supervise.toml into a new test directory.
func writeConfig(t *testing.T, toml string) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, "supervise.toml")
	if err := os.WriteFile(file, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// startDaemon runs `supervise run -c file` with a socket in dir.
func startDaemon(t *testing.T, dir, file string, extra ...string) *daemon {
	t.Helper()
	return startDaemonBinary(t, binary, dir, file, extra...)
}

// startDaemonBinary is startDaemon with another supervise binary.
func startDaemonBinary(t *testing.T, exe, dir, file string, extra ...string) *daemon {
	t.Helper()
	return startDaemonUnder(t, nil, exe, dir, file, extra...)
}

// inPidNamespace is the wrapper that makes supervise PID 1 of a pid
// namespace of its own; --kill-child ends it with its parent.
var inPidNamespace = []string{"unshare", "--pid", "--fork", "--kill-child", "--mount-proc"}

// startDaemonUnder is startDaemonBinary run by wrapper (a command and its
// arguments, such as inPidNamespace, that runs the rest with the same
// stdio), in a process group of its own that the cleanup can kill whole.
func startDaemonUnder(t *testing.T, wrapper []string, exe, dir, file string, extra ...string) *daemon {
	t.Helper()
	if len(wrapper) > 0 {
		if _, err := exec.LookPath(wrapper[0]); err != nil {
			t.Skipf("needs %s", wrapper[0])
		}
	}
	d := newDaemon(t, dir)
	args := append(append(append([]string(nil), wrapper...), exe, "run", "-c", file, "--socket", d.socket), extra...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	d.launch(cmd)
	return d
}

// newDaemon is a daemon in dir, its socket s.sock there, not started yet:
// for tests that start supervise in a way of their own (with launch).
func newDaemon(t *testing.T, dir string) *daemon {
	return &daemon{t: t, dir: dir, socket: filepath.Join(dir, "s.sock"), stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
}

// launch starts cmd (a `supervise run` on d.socket, or what runs one) as
// d's, its output captured. The test's cleanup stops it as
// startInGroup does, then fails the test if supervise refused an illegal
// state transition, and shows its stderr if the test failed.
func (d *daemon) launch(cmd *exec.Cmd) {
	t := d.t
	t.Helper()
	d.cmd = cmd
	cmd.Stdout, cmd.Stderr = d.stdout, d.stderr
	startInGroup(t, cmd, d.done, &d.err, func() {
		// The controller refuses (and logs) a move its lifecycle table
		// does not allow: any of them is a bug, whatever the test checked.
		if strings.Contains(d.stderr.String(), "illegal state transition") {
			t.Errorf("supervise refused an illegal state transition")
		}
		if t.Failed() {
			t.Logf("supervise stderr:\n%s", tail(d.stderr.String(), 60))
		}
	})
}

// startInGroup starts cmd in a process group of its own; done is closed
// once it has exited, its error in *err. The test's cleanup stops it if it
// still runs (SIGTERM, and after 30 s a SIGKILL of its whole group), then
// calls after. Should the test binary itself be killed (a timeout, a ^C
// of go test), cmd gets SIGTERM from the kernel: a supervise left running
// would keep its programs and cgroups and load the machine for whatever
// runs next.
func startInGroup(t *testing.T, cmd *exec.Cmd, done chan struct{}, err *error, after func()) {
	t.Helper()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	startOrphanSafe(t, cmd, done, err)
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
		}
		after()
	})
}

// startOrphanSafe starts cmd with the parent-death signal SIGTERM, then
// waits for it: done is closed once it has exited, its error in *err.
// The kernel sends that signal when the thread that forked cmd ends, not
// the process, and the Go runtime may end a thread whose goroutine
// locked it: cmd is forked from a goroutine that locks its thread and
// holds it until cmd has exited, so the signal comes only with the test
// binary's end. An exec in place (an upgrade) keeps it.
func startOrphanSafe(t *testing.T, cmd *exec.Cmd, done chan struct{}, err *error) {
	t.Helper()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if e := cmd.Start(); e != nil {
			started <- e
			return
		}
		started <- nil
		*err = cmd.Wait()
		close(done)
	}()
	if e := <-started; e != nil {
		t.Fatal(e)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// signal sends sig to the supervisor.
func (d *daemon) signal(sig syscall.Signal) {
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatalf("signalling supervise: %v", err)
	}
}

// wait waits for the supervisor to exit and returns its exit code.
func (d *daemon) wait(timeout time.Duration) int {
	d.t.Helper()
	select {
	case <-d.done:
	case <-time.After(timeout):
		d.t.Fatalf("supervise did not exit within %v", timeout)
	}
	if ee, ok := d.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if d.err != nil {
		d.t.Fatalf("supervise: %v", d.err)
	}
	return 0
}

// ctlCmd is supervisectl args… against the daemon, not started.
func (d *daemon) ctlCmd(args ...string) *exec.Cmd {
	return exec.Command(ctlBinary, append([]string{"--socket", d.socket}, args...)...)
}

// ctl runs supervisectl against the daemon and returns stdout and the exit code.
func (d *daemon) ctl(args ...string) (string, int) {
	d.t.Helper()
	cmd := d.ctlCmd(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		d.t.Fatalf("supervisectl: %v", err)
	}
	return out.String() + errb.String(), code
}

// ctlOK is ctl for a command that must succeed: it fails the test, with
// what supervisectl said, unless the exit code is 0.
func (d *daemon) ctlOK(args ...string) string {
	d.t.Helper()
	out, code := d.ctl(args...)
	if code != 0 {
		d.t.Fatalf("supervisectl %s: exit %d: %s", strings.Join(args, " "), code, out)
	}
	return out
}

type programStatus struct {
	Name          string `json:"name"`
	State         string `json:"state"`
	Pid           int    `json:"pid"`
	Restarts      int    `json:"restarts"`
	NextStartInMs int64  `json:"next_start_in_ms"`
	LastExit      *struct {
		Code   int    `json:"code"`
		Signal string `json:"signal"`
		Reason string `json:"reason"`
	} `json:"last_exit"`
}

// status returns `supervisectl status --json`, by name.
func (d *daemon) status() map[string]programStatus {
	d.t.Helper()
	out, code := d.ctl("status", "--json")
	if code != 0 {
		return nil
	}
	var list []programStatus
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		d.t.Fatalf("status --json: %v\n%s", err, out)
	}
	m := map[string]programStatus{}
	for _, p := range list {
		m[p.Name] = p
	}
	return m
}

// eventually polls cond until it holds or the (generous) deadline passes.
// It waits for a state to be reached, never for a delay to pass.
func eventually(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readLines returns the lines of a file, or nil when it does not exist.
func readLines(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (cgroups and namespaces); CI runs as root")
	}
}

// testdataProgram is a Go program of testdata for the tests to run: the
// function it returns builds testdata/name once per run, beside the
// supervise binary (where uid 65534 may run it), and gives its path.
func testdataProgram(name string) func(t *testing.T) string {
	build := sync.OnceValues(func() (string, error) {
		out := filepath.Join(filepath.Dir(binary), name)
		cmd := exec.Command("go", "build", "-o", out, "./testdata/"+name)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("building %s: %v\n%s", name, err, b)
		}
		return out, nil
	})
	return func(t *testing.T) string {
		t.Helper()
		p, err := build()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// needPython skips a test whose programs are python3 scripts (sd_notify
// senders) where there is no python3.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 (sd_notify senders)")
	}
}

// runCheck runs `supervise check -c file` and returns its combined output and exit code.
func runCheck(t *testing.T, file string) (string, int) {
	t.Helper()
	out, err := exec.Command(binary, "check", "-c", file).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// writeFileNow creates an empty marker file.
func writeFileNow(path string) error { return os.WriteFile(path, nil, 0o644) }
