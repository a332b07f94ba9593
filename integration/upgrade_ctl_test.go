package integration

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Commands under way when supervise upgrades in place come through it:
// the server ends them saying so, and the client waits for the new
// binary and carries on where it was.

// bgCtl is a supervisectl running in the background.
type bgCtl struct {
	cmd       *exec.Cmd
	out, errb *syncBuffer
	done      chan struct{}
	code      int
}

func (d *daemon) ctlBackground(args ...string) *bgCtl {
	d.t.Helper()
	b := &bgCtl{out: &syncBuffer{}, errb: &syncBuffer{}, done: make(chan struct{})}
	b.cmd = d.ctlCmd(args...)
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.errb
	if err := b.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	go func() {
		err := b.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			b.code = ee.ExitCode()
		} else if err != nil {
			b.code = -1
		}
		close(b.done)
	}()
	d.t.Cleanup(func() {
		_ = b.cmd.Process.Kill()
		<-b.done
	})
	return b
}

// readyOf is a program's pid and readiness, from status --json.
func (d *daemon) readyOf(name string) (pid int, state string, ready bool) {
	d.t.Helper()
	out, code := d.ctl("status", "--json", name)
	if code != 0 {
		return 0, "", false
	}
	var list []struct {
		State string `json:"state"`
		Pid   int    `json:"pid"`
		Ready *bool  `json:"ready"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 {
		d.t.Fatalf("status --json %s: %v\n%s", name, err, out)
	}
	return list[0].Pid, list[0].State, list[0].Ready != nil && *list[0].Ready
}

func (b *bgCtl) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(timeout):
		t.Fatalf("supervisectl %v did not end within %v; stderr: %s", b.cmd.Args[1:], timeout, b.errb.String())
	}
	return b.code
}

// TestUpgradeKeepsCommandsUnderWay: `logs -f`, `events -f` and `restart`
// (which waits) of a
// slow starter run while supervise upgrades; the restart completes once
// the new process is ready, and the follower goes on with every line
// once.
func TestUpgradeKeepsCommandsUnderWay(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pause")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf(`
[program.talker]
command = %s

[program.slow]
command = ["bash", "-c", "sleep 4; echo ready; exec sleep infinity"]
ready_log_line = "^ready$"
`, counterProgram(fifo, "0.05"))
	d, _ := upgradeDaemon(t, toml)
	var old int
	eventually(t, "slow ready", 60*time.Second, func() bool {
		pid, state, ready := d.readyOf("slow")
		old = pid
		return state == "Running" && ready
	})
	follow := d.ctlBackground("logs", "-f", "talker")
	events := d.ctlBackground("events", "-f", "--json")
	restart := d.ctlBackground("restart", "slow") // it waits for the new process to be ready
	eventually(t, "the new process of slow running, not ready yet", 60*time.Second, func() bool {
		pid, state, ready := d.readyOf("slow")
		return state == "Running" && pid != old && pid != 0 && !ready
	})
	d.upgrade("upgrade")
	if code := restart.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("restart --wait across the upgrade: exit %d: %s", code, restart.errb.String())
	}
	if pid, state, ready := d.readyOf("slow"); !ready || pid == old {
		t.Errorf("restart --wait returned with slow %s, pid %d, ready %v (old pid %d)", state, pid, ready, old)
	}
	// The follower goes on after the upgrade.
	n := strings.Count(follow.out.String(), "\n")
	eventually(t, "lines followed after the upgrade", 60*time.Second, func() bool {
		select {
		case <-follow.done:
			t.Fatalf("logs -f ended: exit %d: %s", follow.code, follow.errb.String())
		default:
		}
		return strings.Count(follow.out.String(), "\n") > n+5
	})
	_ = follow.cmd.Process.Signal(syscall.SIGINT)
	follow.wait(t, 30*time.Second)
	// The events follower goes on too: the upgrade's own event once, and
	// no event twice (each has its time to the nanosecond).
	eventually(t, "the upgrade's event followed", 60*time.Second, func() bool {
		return strings.Contains(events.out.String(), "upgraded supervise")
	})
	_ = events.cmd.Process.Signal(syscall.SIGINT)
	events.wait(t, 30*time.Second)
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(events.out.String()), "\n") {
		if seen[l] {
			t.Errorf("event followed twice: %s", l)
		}
		seen[l] = true
	}
	if n := strings.Count(events.out.String(), "upgraded supervise"); n != 1 {
		t.Errorf("the upgrade's event followed %d times, want once", n)
	}
	want := 0
	for i, l := range strings.Split(strings.TrimSpace(follow.out.String()), "\n") {
		text := l[strings.LastIndex(l, " ")+1:]
		m := lineRE.FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("followed line %d is %q", i+1, l)
		}
		got, _ := strconv.Atoi(m[1])
		if want != 0 && got != want {
			t.Fatalf("followed line %d is %q, want %d-x (a gap or a duplicate)", i+1, l, want)
		}
		want = got + 1
	}
}
