package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// devRun is one `supervise` run in a project folder, its console
// (stdout and stderr together) captured.
type devRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

// writeFiles writes name → text into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// startDev runs `supervise args…` in dir with env (a developer's shell:
// devEnv plus extra), in its own process group; cleanup stops it.
func startDev(t *testing.T, dir string, env []string, args ...string) *devRun {
	t.Helper()
	return startRunner(t, dir, env, append([]string{binary}, args...)...)
}

// startRunner is startDev for any runner's argv (foreman's too).
func startRunner(t *testing.T, dir string, env []string, argv ...string) *devRun {
	t.Helper()
	args := argv[1:]
	r := &devRun{t: t, out: &syncBuffer{}, done: make(chan struct{})}
	r.cmd = exec.Command(argv[0], args...)
	r.cmd.Dir, r.cmd.Env = dir, env
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	startInGroup(t, r.cmd, r.done, &r.err, func() {
		if t.Failed() {
			t.Logf("%s %v in %s:\n%s", filepath.Base(argv[0]), args, dir, tail(r.out.String(), 40))
		}
	})
	return r
}

// wait waits (bounded) for supervise to exit and returns its exit code.
func (r *devRun) wait(timeout time.Duration) int {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(timeout):
		r.t.Fatalf("supervise did not exit within %v:\n%s", timeout, tail(r.out.String(), 40))
	}
	if ee, ok := r.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return 0
}

// runDev runs `supervise args…` in dir to its end (bounded) and returns
// its console and exit code.
func runDev(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	r := startDev(t, dir, env, args...)
	code := r.wait(60 * time.Second)
	return r.out.String(), code
}

// readPid reads a pid a program wrote to file (0 if not there yet).
func readPid(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
