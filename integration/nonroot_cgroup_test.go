package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNonRootSupervisorWithRootsCgroupTree: a supervise of an ordinary
// user runs its programs that ask for no limits without a cgroup (and says
// so once), and refuses one that asks for limits with a reason: the same
// whether a root supervise's cgroup subtree is there (it runs alongside)
// or not (it has stopped and may have removed its subtree).
func TestNonRootSupervisorWithRootsCgroupTree(t *testing.T) {
	needRoot(t)
	dir0, file0 := writeConfig(t, "[program.mk]\ncommand = [\"sleep\", \"100000\"]\nsandbox = { pids_max = 8 }\n")
	d0 := startDaemon(t, dir0, file0)
	d0.running("mk")
	t.Run("root's tree there", func(t *testing.T) { checkNonRootRun(t) })
	d0.signal(syscall.SIGTERM)
	d0.wait(60 * time.Second)
	t.Run("root has stopped", func(t *testing.T) { checkNonRootRun(t) })
}

func checkNonRootRun(t *testing.T) {
	dir, err := os.MkdirTemp("", "nonroot-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o777))
	file := filepath.Join(dir, "supervise.toml")
	must(t, os.WriteFile(file, []byte(`
[program.plain1]
command = ["sleep", "100000"]
[program.plain2]
command = ["sleep", "100000"]
[program.limited]
command = ["sleep", "100000"]
restart = "never"
sandbox = { memory_max = "64MiB" }
`), 0o644))
	d := newDaemon(t, dir)
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", binary, "run", "-c", file, "--socket", d.socket)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	d.launch(cmd)
	// The client trusts a server of uid 65534 only when told.
	status := func() map[string]programStatus {
		out, err := d.ctlCmd("--server-uid", "65534", "status", "--json").Output()
		if err != nil {
			return nil
		}
		var list []programStatus
		if json.Unmarshal(out, &list) != nil {
			return nil
		}
		m := map[string]programStatus{}
		for _, p := range list {
			m[p.Name] = p
		}
		return m
	}
	var st map[string]programStatus
	eventually(t, "the plain programs running, the limited one ended", 60*time.Second, func() bool {
		st = status()
		return st["plain1"].State == "Running" && st["plain2"].State == "Running" && st["limited"].LastExit != nil
	})
	if st["limited"].LastExit.Reason != "StartError" {
		t.Errorf("limited: %+v, want a StartError", st["limited"].LastExit)
	}
	log := d.stderr.String()
	if n := strings.Count(log, "no cgroup for programs without limits"); n != 1 {
		t.Errorf("said %d times that programs run without a cgroup, want once", n)
	}
	if !strings.Contains(log, "limits asked, but uid 65534 may not create cgroups") {
		t.Errorf("no reason given for the limited program:\n%s", tail(log, 20))
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		t.Errorf("the non-root supervise did not exit on SIGTERM")
	}
}
