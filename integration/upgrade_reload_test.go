package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The config after an upgrade in place: the new binary takes the programs
// over under the config they run with, then reads the file as a reload
// does.

// argv is the command line of pid, its arguments joined by spaces.
func argv(pid int) string {
	return strings.TrimSpace(strings.ReplaceAll(cmdline(pid), "\x00", " "))
}

// TestUpgradeReloadsTheEditedConfig: a file edited since the last reload
// (a program added, one removed, one's command changed, one untouched)
// does not block an upgrade: it is applied after the take-over, as a
// reload. The untouched program keeps its pid, the added one runs, the
// removed one is gone, the changed one restarted with its new command,
// and the command says what the reload changed.
func TestUpgradeReloadsTheEditedConfig(t *testing.T) {
	const before = `[supervisor]
watch_config = false
[program.keep]
command = ["sleep", "10001"]
[program.gone]
command = ["sleep", "10002"]
[program.changed]
command = ["sleep", "10003"]
`
	d, exe := upgradeDaemon(t, before)
	pids := d.running("keep", "gone", "changed")
	after := `[supervisor]
watch_config = false
[program.keep]
command = ["sleep", "10001"]
[program.changed]
command = ["sleep", "10004"]
[program.added]
command = ["sleep", "10005"]
`
	if err := os.WriteFile(filepath.Join(d.dir, "supervise.toml"), []byte(after), 0o644); err != nil {
		t.Fatal(err)
	}
	out := d.upgradeTo(exe, "v2")
	for _, want := range []string{"v1.0.0-test → v2.0.0-test", "config reloaded: 1 added (added), 1 removed (gone), 1 changed (changed; 1 with new processes)"} {
		if !strings.Contains(out, want) {
			t.Errorf("upgrade says %q, want %q in it", out, want)
		}
	}
	eventually(t, "the reload applied", 60*time.Second, func() bool {
		st := d.status()
		_, gone := st["gone"]
		return !gone && st["added"].State == "Running" && st["changed"].State == "Running" && st["changed"].Pid != pids["changed"]
	})
	st := d.status()
	if st["keep"].Pid != pids["keep"] {
		t.Errorf("keep has pid %d, want %d (untouched)", st["keep"].Pid, pids["keep"])
	}
	if got := argv(st["changed"].Pid); got != "sleep 10004" {
		t.Errorf("changed runs %q, want the new command", got)
	}
	if got := argv(st["added"].Pid); got != "sleep 10005" {
		t.Errorf("added runs %q", got)
	}
	if alive(pids["gone"]) && argv(pids["gone"]) == "sleep 10002" {
		t.Errorf("gone's process %d still runs", pids["gone"])
	}
	if v := d.version(); v.Version != "v2.0.0-test" || v.Pid != d.cmd.Process.Pid {
		t.Errorf("version %+v", v)
	}
	d.shutdown(60 * time.Second)
}

// TestUpgradeWithABrokenConfig: a config file with an error does not stop
// an upgrade either: the new binary takes every program over under the
// running config, keeps it, and the command and the events say the
// reload's error.
func TestUpgradeWithABrokenConfig(t *testing.T) {
	const cfg = `[supervisor]
watch_config = false
[program.a]
command = ["sleep", "10011"]
[program.b]
command = ["sleep", "10012"]
`
	d, exe := upgradeDaemon(t, cfg)
	pids := d.running("a", "b")
	file := filepath.Join(d.dir, "supervise.toml")
	if err := os.WriteFile(file, []byte("[supervisor]\nwatch_config = false\n[program.a]\ncommand = [\"sleep\", \"10013\"]\nrestart = \"sometimes\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := d.upgradeTo(exe, "v2")
	for _, want := range []string{"v1.0.0-test → v2.0.0-test", "config reload failed", "supervise.toml:5", "restart", "the running config stays"} {
		if !strings.Contains(out, want) {
			t.Errorf("upgrade says %q, want %q in it", out, want)
		}
	}
	if v := d.version(); v.Version != "v2.0.0-test" {
		t.Errorf("version %+v", v)
	}
	// Untouched, and supervised under the running config: b is still
	// there, and a kill of a is a restart with its old command.
	time.Sleep(time.Second) // a reconcile would have begun
	if got := d.pids(); !mapsEqual(got, pids) {
		t.Fatalf("pids changed: before %v, after %v", pids, got)
	}
	if out, _ := d.ctl("status"); !strings.Contains(out, "upgraded from v1.0.0-test") || !strings.Contains(out, "config reload failed") {
		t.Errorf("status does not say the reload after the upgrade failed:\n%s", tail(out, 3))
	}
	events, _ := d.ctl("events")
	if !strings.Contains(events, "ReloadFailed") {
		t.Errorf("no ReloadFailed event:\n%s", tail(events, 10))
	}
	syscall.Kill(pids["a"], syscall.SIGKILL)
	eventually(t, "a restarted", 60*time.Second, func() bool {
		st := d.status()["a"]
		return st.State == "Running" && st.Pid != 0 && st.Pid != pids["a"]
	})
	if got := argv(d.status()["a"].Pid); got != "sleep 10011" {
		t.Errorf("a restarted as %q, want its running config's command", got)
	}
	// Fixed, the file reloads as usual.
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := d.ctl("reload"); code != 0 {
		t.Errorf("reload: %s", out)
	}
	d.shutdown(60 * time.Second)
}

// TestUpgradeKeepsAJobsLastRun: status shows a scheduled program's last
// run and next time after an upgrade as before it.
func TestUpgradeKeepsAJobsLastRun(t *testing.T) {
	d, exe := upgradeDaemon(t, "[supervisor]\nwatch_config = false\n[program.job]\ncommand = [\"true\"]\nschedule = \"0 0 1 1 *\"\n")
	eventually(t, "supervise up", 60*time.Second, func() bool { _, ok := d.status()["job"]; return ok })
	d.ctlOK("start", "job")
	var before jobStatus
	eventually(t, "the job's run recorded", 60*time.Second, func() bool {
		before = d.jobStatus("job")
		return before.LastRun != nil && before.LastRun.Result == "succeeded"
	})
	d.upgradeTo(exe, "v2")
	after := d.jobStatus("job")
	if after.LastRun == nil || after.LastRun.Result != "succeeded" || !after.LastRun.StartedAt.Equal(before.LastRun.StartedAt) {
		t.Errorf("after the upgrade the last run is %+v, want %+v", after.LastRun, before.LastRun)
	}
	if after.NextRun == nil || before.NextRun == nil || !after.NextRun.Equal(*before.NextRun) {
		t.Errorf("next run %v after the upgrade, %v before", after.NextRun, before.NextRun)
	}
}

// TestUpgradeKeepsLivenessCounts: a liveness probe two failures into a
// failure_threshold of three fails the program at its next failure, the
// first after the upgrade. Each probe writes the pid of the run it probed.
func TestUpgradeKeepsLivenessCounts(t *testing.T) {
	dir := t.TempDir()
	pidFile, probes := filepath.Join(dir, "pid"), filepath.Join(dir, "probes")
	cfg := fmt.Sprintf(`[supervisor]
watch_config = false
[program.a]
command = ["sh", "-c", "echo $$ > %s; exec sleep 10000"]
[program.a.probes.liveness]
command = ["sh", "-c", "cat %s >> %s; exit 1"]
initial_delay = "1s"
period = "3s"
failure_threshold = 3
`, pidFile, pidFile, probes)
	d, exe := upgradeDaemon(t, cfg)
	eventually(t, "two failed probes", 60*time.Second, func() bool {
		b, _ := os.ReadFile(probes)
		return strings.Count(string(b), "\n") == 2
	})
	first := d.status()["a"].Pid
	d.upgradeTo(exe, "v2")
	eventually(t, "a restarted for its liveness", 60*time.Second, func() bool {
		st := d.status()["a"]
		return st.Restarts >= 1 && st.Pid != first
	})
	b, _ := os.ReadFile(probes)
	if n := strings.Count(string(b), strconv.Itoa(first)+"\n"); n != 3 {
		t.Errorf("the first run was probed %d times before its restart, want 3 (two before the upgrade, one after):\n%s", n, b)
	}
}
