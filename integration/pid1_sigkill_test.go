package integration

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPID1KilledAgainAndAgain: supervise as PID 1 of a pid namespace is
// SIGKILLed four times, each time started again, as a container runtime
// restarts a container in place. The kernel reuses pid namespace inodes,
// and PID 1 is always 1: a new start must never ask for a cgroup name a
// dead one left (that was a StartError, and a restart = "never" program
// Failed). After the last, clean, stop no cgroup of the programs remains.
func TestPID1KilledAgainAndAgain(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	dir, file := writeConfig(t, `
[program.kpa]
command = ["sleep", "100000"]
sandbox = { pids_max = 32 }
[program.kpb]
command = ["sleep", "100000"]
restart = "never"
sandbox = { pids_max = 32 }
`)
	d := &daemon{t: t, dir: dir, socket: filepath.Join(dir, "s.sock")}
	start := func(round int) (cmd *exec.Cmd, stderr *syncBuffer, done chan struct{}) {
		cmd = exec.Command("unshare", "--pid", "--fork", "--kill-child", "--mount-proc", binary, "run", "-c", file, "--socket", d.socket)
		cmd.Dir = dir
		stderr = &syncBuffer{}
		cmd.Stdout, cmd.Stderr = stderr, stderr
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done = make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			select {
			case <-done:
			default:
				cmd.Process.Kill()
				<-done
			}
			if t.Failed() {
				t.Logf("round %d stderr:\n%s", round, tail(stderr.String(), 30))
			}
		})
		eventually(t, "both programs running, round "+strconv.Itoa(round), 60*time.Second, func() bool {
			st := d.status()
			return st["kpa"].State == "Running" && st["kpb"].State == "Running"
		})
		if strings.Contains(stderr.String(), "StartError") || strings.Contains(stderr.String(), "file exists") {
			t.Fatalf("round %d: a start failed:\n%s", round, tail(stderr.String(), 30))
		}
		return cmd, stderr, done
	}
	for round := 1; round <= 4; round++ {
		cmd, _, done := start(round)
		// childOf: supervise, PID 1 of the namespace, unshare's only child.
		if err := syscall.Kill(childOf(t, cmd.Process.Pid), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: the namespace did not end after SIGKILL of its PID 1", round)
		}
	}
	cmd, stderr, done := start(5)
	// childOf: supervise, PID 1 of the namespace, unshare's only child.
	if err := syscall.Kill(childOf(t, cmd.Process.Pid), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("supervise did not stop on SIGTERM")
	}
	if !strings.Contains(stderr.String(), "removed the cgroup of a dead supervisor") {
		t.Errorf("the last start swept nothing:\n%s", tail(stderr.String(), 30))
	}
	for _, name := range []string{"kpa", "kpb"} {
		if cgs := programCgroups(t, name); len(cgs) > 0 {
			t.Errorf("cgroups of %s left after a clean stop: %v", name, cgs)
		}
	}
}
