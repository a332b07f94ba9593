package integration

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startInPidNamespace starts supervise as PID 1 of a pid namespace of its
// own (unshare), with the harness's daemon around it.
func startInPidNamespace(t *testing.T, dir, file string) *daemon {
	t.Helper()
	d := &daemon{t: t, dir: dir, socket: filepath.Join(dir, "s.sock"), stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	d.cmd = exec.Command("unshare", "--pid", "--fork", "--kill-child", "--mount-proc", binary, "run", "-c", file, "--socket", d.socket)
	d.cmd.Dir = dir
	d.cmd.Stdout, d.cmd.Stderr = d.stdout, d.stderr
	d.cmd.WaitDelay = 5 * time.Second
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = d.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-d.done:
			case <-time.After(30 * time.Second):
				_ = d.cmd.Process.Kill()
				<-d.done
			}
		}
		if t.Failed() {
			t.Logf("stderr of the supervise in %s:\n%s", dir, tail(d.stderr.String(), 40))
		}
	})
	return d
}

// Two supervise, each PID 1 of its own pid namespace, on one cgroup
// hierarchy (containers without a cgroup namespace): neither sees the
// other's processes, so each finds the other's cgroups empty at its start.
// The kernel, which sees them, refuses to remove them; the second must take
// that as "alive" and leave them at once, not retry each for the kill
// timeout, and the first one's programs run on.
func TestSweepLeavesAnotherPidNamespacesCgroups(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	dirA, fileA := writeConfig(t, `
[program.a1]
command = ["sleep", "infinity"]
[program.a2]
command = ["sleep", "infinity"]
`)
	a := startInPidNamespace(t, dirA, fileA)
	before := a.running("a1", "a2")

	dirB, fileB := writeConfig(t, `
[program.b1]
command = ["sleep", "infinity"]
`)
	b := startInPidNamespace(t, dirB, fileB)
	b.running("b1")
	if log := b.stderr.String(); strings.Contains(log, "cgroup of a dead supervisor") {
		t.Errorf("the second supervise tried to sweep the first one's cgroups:\n%s", tail(log, 20))
	}
	after := a.running("a1", "a2")
	for n, pid := range before {
		if after[n] != pid {
			t.Errorf("%s of the first supervise has pid %d after the second started, want %d", n, after[n], pid)
		}
	}
}
