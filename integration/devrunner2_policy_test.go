package integration

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// --can-die: that process ending does not end the set; --auto-restart:
// that process is restarted when it exits. The same from a supervise.toml
// [procfile] table.
func TestDevRunnerCanDieAndAutoRestart(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Procfile": "migrate: echo migrated\nticker: echo tick; sleep 0.2\nweb: echo web up; exec sleep 1000\n",
	})
	env := append(devEnv(t.TempDir()), "NO_COLOR=1")
	check := func(r *devRun, how string) {
		t.Helper()
		eventually(t, how+": ticker restarted", 60*time.Second, func() bool {
			return strings.Count(r.out.String(), "| tick") >= 2
		})
		out := r.out.String()
		if !strings.Contains(out, "migrate | migrated") || strings.Contains(out, "stopping all") || strings.Count(out, "web up") != 1 {
			t.Errorf("%s: migrate's end or ticker's restarts stopped or restarted the set:\n%s", how, out)
		}
		select {
		case <-r.done:
			t.Fatalf("%s: supervise exited:\n%s", how, out)
		default:
		}
	}
	r := startDev(t, dir, env, "--can-die", "migrate", "--auto-restart", "ticker")
	check(r, "flags")
	r.cmd.Process.Signal(syscall.SIGTERM) // one runner per folder
	r.wait(30 * time.Second)

	// Without --can-die, migrate's end ends the set, as foreman's.
	out, code := runDev(t, dir, env, "--auto-restart", "ticker")
	if code != 0 || !strings.Contains(out, "migrate ended; stopping all") {
		t.Errorf("without --can-die: exit %d:\n%s", code, out)
	}

	dir2 := t.TempDir()
	writeFiles(t, dir2, map[string]string{
		"Procfile.dev":   "migrate: echo migrated\nticker: echo tick; sleep 0.2\nweb: echo web up; exec sleep 1000\n",
		"supervise.toml": "[procfile]\nfile = \"Procfile.dev\"\ncan_die = [\"migrate\"]\nauto_restart = [\"ticker\"]\n",
	})
	check(startDev(t, dir2, env), "supervise.toml [procfile]")

	if out, code := runDev(t, dir, env, "--can-die", "nope"); code != 2 || !strings.Contains(out, `can_die: no process type "nope" in the Procfile`) {
		t.Errorf("--can-die nope: exit %d:\n%s", code, out)
	}
}

// A fast one-shot ending the set does not silence a neighbour started
// with it: what the neighbour prints at once reaches the console first.
func TestDevRunnerOneShotLetsNeighboursSpeak(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Procfile": "once: true\nweb: echo web up; exec sleep 1000\n",
	})
	env := append(devEnv(t.TempDir()), "NO_COLOR=1")
	for run := range 20 {
		out, code := runDev(t, dir, env)
		if code != 0 || !strings.Contains(out, "web  | web up") && strings.Contains(out, "web  | started") {
			t.Fatalf("run %d: exit %d; web started but its first line never came:\n%s", run, code, out)
		}
	}
}
