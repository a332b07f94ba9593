package integration

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A closed terminal sends the dev runner SIGHUP: like Ctrl-C it stops
// every process and supervise exits (a service's SIGHUP reloads:
// TestReloadOnSIGHUPAndCtl).
func TestDevRunnerStopsOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Procfile": "web: echo $$ > web.pid; exec sleep 1000\nworker: echo $$ > worker.pid; exec sleep 1000\n",
	})
	r := startDev(t, dir, append(devEnv(t.TempDir()), "NO_COLOR=1"))
	var pids []int
	eventually(t, "both processes running", 30*time.Second, func() bool {
		pids = pids[:0]
		for _, n := range []string{"web", "worker"} {
			if pid := readPid(filepath.Join(dir, n+".pid")); pid > 0 && alive(pid) {
				pids = append(pids, pid)
			}
		}
		return len(pids) == 2
	})
	if err := r.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	code := r.wait(30 * time.Second)
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d still alive after supervise exited on SIGHUP", pid)
		}
	}
	if !strings.Contains(r.out.String(), "stopping") {
		t.Errorf("no word of stopping on the console (exit %d):\n%s", code, r.out.String())
	}
}
