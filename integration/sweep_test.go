package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A supervisor killed with SIGKILL leaves its programs' cgroups, and a
// daemonized program with no pid namespace lives on in one; the next
// supervisor removes the cgroup and kills the leftover at start, so it
// cannot collide with the new instance.
func TestLeftoversOfAKilledSupervisorAreSwept(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, `
[program.daemon]
command = ["sh", "-c", "setsid sleep 1000 & echo $! > leftover.pid; exec sleep 1000"]
[program.daemon.sandbox]
pids_max = 50
`)
	d := startDaemon(t, dir, file)
	var leftover int
	eventually(t, "daemon running and its leftover written", 30*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "leftover.pid"))
		leftover, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && leftover > 0 && d.status()["daemon"].State == "Running"
	})
	program := d.status()["daemon"].Pid
	d.signal(syscall.SIGKILL)
	d.wait(30 * time.Second)
	t.Cleanup(func() {
		_ = syscall.Kill(leftover, syscall.SIGKILL)
		_ = syscall.Kill(program, syscall.SIGKILL)
	})
	time.Sleep(200 * time.Millisecond)
	if !alive(leftover) || !alive(program) {
		t.Fatalf("SIGKILL of the supervisor took its programs along (leftover %d alive %v, program %d alive %v): nothing to sweep", leftover, alive(leftover), program, alive(program))
	}

	_ = os.Remove(filepath.Join(dir, "leftover.pid"))
	d2 := startDaemon(t, dir, file)
	eventually(t, "the old program and its leftover killed", 30*time.Second, func() bool {
		return !alive(leftover) && !alive(program)
	})
	eventually(t, "the new instance running", 30*time.Second, func() bool { return d2.status()["daemon"].State == "Running" })
	if !strings.Contains(d2.stderr.String(), "removed the cgroup of a dead supervisor") {
		t.Errorf("no log of the sweep:\n%s", tail(d2.stderr.String(), 20))
	}
}
