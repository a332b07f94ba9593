package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A failed post_start stops its process as a stop does: pre_stop (inside
// stop_timeout), then the stop signal, which gets min_stop_grace however
// long the hook took, then SIGKILL; the start counts as a crash.
func TestFailedPostStartStopsWithTheGraceFloor(t *testing.T) {
	dir, file := writeConfig(t, `
[program.web]
command = ["sh", "-c", "trap 'date +%s%N > term' TERM; echo $$ > pid; while :; do sleep 0.05; done"]
stop_timeout = "1s"
min_stop_grace = "3s"
[program.web.hooks.post_start]
command = ["sh", "-c", "until [ -s pid ]; do sleep 0.05; done; exit 1"]
[program.web.hooks.pre_stop]
command = ["sleep", "30"]
[program.web.backoff]
initial = "1h"
`)
	d := startDaemon(t, dir, file)
	var pid int
	eventually(t, "the program's pid", 60*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	})
	var termAt time.Time
	eventually(t, "the stop signal", 60*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "term"))
		ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		termAt = time.Unix(0, ns)
		return err == nil
	})
	eventually(t, "the kill", 60*time.Second, func() bool { return !alive(pid) })
	// Observed late, never early: the kill came at least min_stop_grace
	// after the signal, less the trap's own delay (a sleep of 0.05 s).
	if gap := time.Since(termAt); gap < 2500*time.Millisecond {
		t.Errorf("SIGKILL %v after the stop signal, want min_stop_grace (3s)", gap)
	}
	eventually(t, "the failed start recorded", 60*time.Second, func() bool {
		s := d.status()["web"]
		return s.State == "CrashLoopBackOff" && s.LastExit != nil && s.LastExit.Reason == "HookError"
	})
}
