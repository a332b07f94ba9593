package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Upgrades in place of the dev runner with --tty: each program writes to
// a pseudo-terminal, whose master is handed over like a pipe.

// devCtl runs supervisectl in a dev runner's project folder (it finds the
// runner's socket from there) and returns its stdout, stderr and code.
func devCtl(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(ctlBinary, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// devPids is every program's pid in a dev runner, by name.
func devPids(t *testing.T, dir string, env []string) map[string]int {
	t.Helper()
	out, _, code := devCtl(t, dir, env, "status", "--json")
	if code != 0 {
		return nil
	}
	var list []programStatus
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	m := map[string]int{}
	for _, p := range list {
		if p.State == "Running" {
			m[p.Name] = p.Pid
		}
	}
	return m
}

// countedOnConsole checks the console lines "name | N-x" of a counter
// program as checkCounted does a log file.
func countedOnConsole(t *testing.T, console, name string) int {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(console, "\n") {
		// The runner's own lines about the program ("started (pid 7)",
		// "killed by signal TERM") start with a letter.
		if rest, ok := strings.CutPrefix(l, name+" | "); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			lines = append(lines, rest)
		}
	}
	return checkCountedLines(t, name, lines)
}

// TestUpgradeDevRunnerTty: programs on pseudo-terminals (--tty) writing
// numbered lines go through several upgrades with their pids, their
// terminal and its size, and every line once on the runner's console;
// the runner's own lines about the upgrade are not lost in the exec.
func TestUpgradeDevRunnerTty(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pause")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Each line in two writes, so that an upgrade may fall between them;
	// a program that is not on a terminal, or whose terminal changed size,
	// stops counting.
	script := fmt.Sprintf(`exec 3<>%s
[ -t 1 ] && [ -t 2 ] || { echo not-a-terminal; exit 9; }
exec 4>&1; stty cols 123 rows 45 <&4
i=0
while :; do
  i=$((i+1)); printf '%%d-' $i; printf 'x\n'
  [ "$(stty size <&4)" = "45 123" ] || { echo size-lost; exit 9; }
  read -t 0.05 -u 3
done
`, fifo)
	writeFiles(t, dir, map[string]string{
		"count.sh": script,
		"Procfile": "a: exec bash ./count.sh\nb: exec bash ./count.sh\n",
	})
	exe := installV1(t, dir)
	env := append(devEnv(t.TempDir()), "NO_COLOR=1")
	r := startRunner(t, dir, env, exe, "--tty")
	var before map[string]int
	eventually(t, "both programs running", 60*time.Second, func() bool {
		before = devPids(t, dir, env)
		return len(before) == 2
	})
	current := "v1"
	for u := 1; u <= 4; u++ {
		if u%2 == 0 {
			current = map[string]string{"v1": "v2", "v2": "v1"}[current]
			installBinary(t, upgradeBuild(t, current), exe, 0o755)
		}
		out, errOut, code := devCtl(t, dir, env, "upgrade")
		if code != 0 {
			t.Fatalf("upgrade %d: exit %d: %s%s", u, code, out, errOut)
		}
		if got := devPids(t, dir, env); !mapsEqual(got, before) {
			t.Fatalf("upgrade %d: pids changed:\nbefore %v\nafter  %v", u, before, got)
		}
		// Lines come after the upgrade.
		n := strings.Count(r.out.String(), "a | ")
		eventually(t, "lines after the upgrade", 60*time.Second, func() bool { return strings.Count(r.out.String(), "a | ") > n+3 })
	}
	// A binary that refuses the take-over: the old one takes the
	// terminals back, checked the same way, and nothing is lost.
	installBinary(t, upgradeBuild(t, "refuses"), exe, 0o755)
	if out, errOut, code := devCtl(t, dir, env, "upgrade"); code != 1 || !strings.Contains(out+errOut, "refusing the take-over") {
		t.Fatalf("upgrade to a binary that refuses: exit %d: %s%s", code, out, errOut)
	}
	if got := devPids(t, dir, env); !mapsEqual(got, before) {
		t.Fatalf("after the fall-back: pids changed:\nbefore %v\nafter  %v", before, got)
	}
	n := strings.Count(r.out.String(), "a | ")
	eventually(t, "lines after the fall-back", 60*time.Second, func() bool { return strings.Count(r.out.String(), "a | ") > n+3 })
	v, _, _ := devCtl(t, dir, env, "version")
	if !strings.Contains(v, current) || !strings.Contains(v, "pid "+strconv.Itoa(r.cmd.Process.Pid)) {
		t.Errorf("version after the upgrades: %s", v)
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	r.wait(60 * time.Second)
	console := r.out.String()
	for _, name := range []string{"a", "b"} {
		if n := countedOnConsole(t, console, name); n < 10 {
			t.Errorf("%s wrote %d lines", name, n)
		}
	}
	if strings.Contains(console, "not-a-terminal") || strings.Contains(console, "size-lost") || strings.Contains(console, "\r") {
		t.Errorf("a program lost its terminal or its size:\n%s", tail(console, 20))
	}
	// The runner's own lines on both sides of each exec, none lost in it,
	// and its start-up banner once: an upgrade is not a new start.
	if n := strings.Count(console, "talks to it"); n != 1 {
		t.Errorf("the start-up banner %d times, want once:\n%s", n, tail(console, 40))
	}
	if n := strings.Count(console, "executing the new binary"); n != 5 {
		t.Errorf("%d lines about executing the new binary, want 5:\n%s", n, tail(console, 40))
	}
	if n := strings.Count(console, "upgraded in place"); n != 4 {
		t.Errorf("%d lines about the upgrade done, want 4:\n%s", n, tail(console, 40))
	}
}

// TestUpgradeThenStopRemovesTheCgroups: the cgroups the first binary made
// are the new one's to remove: stopped after upgrades, supervise leaves
// no cgroup of its subtree and no process of any program, a daemonized
// grandchild included.
func TestUpgradeThenStopRemovesTheCgroups(t *testing.T) {
	needRoot(t)
	cgs := testCgroups(t)
	dir := t.TempDir()
	grandchild := filepath.Join(dir, "grandchild.pid")
	toml := fmt.Sprintf(`
[program.app]
command = ["sleep", "100000"]
sandbox = { pids_max = 16 }

[program.forker]
command = ["bash", "-c", "setsid sleep 100001 & echo $! > %s; exec sleep 100002"]
sandbox = { pids_max = 16 }
`, grandchild)
	file := filepath.Join(dir, "supervise.toml")
	must(t, os.WriteFile(file, []byte(toml), 0o644))
	exe := installV1(t, dir)
	// Started in cgroups of the test's own, so that the subtree checked is
	// this supervisor's alone.
	wrapper := []string{"sh", "-c", `for d in ` + strings.Join(cgs, " ") + `; do echo $$ > "$d/cgroup.procs" || exit 97; done; exec "$@"`, "sh"}
	d := startDaemonUnder(t, wrapper, exe, dir, file)
	eventually(t, "both programs running and the grandchild started", 60*time.Second, func() bool {
		st := d.status()
		return st["app"].State == "Running" && st["forker"].State == "Running" && readPid(grandchild) > 0
	})
	pids := []int{d.status()["app"].Pid, d.status()["forker"].Pid, readPid(grandchild)}
	for _, cg := range cgs {
		if ents, _ := os.ReadDir(filepath.Join(cg, "supervise")); len(ents) == 0 {
			t.Fatalf("%s/supervise holds no cgroup: the test cannot see what it checks", cg)
		}
	}
	for _, next := range []string{"v2", "v1"} {
		d.upgradeTo(exe, next)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(60 * time.Second); code != 0 {
		t.Errorf("supervise exited %d", code)
	}
	for _, cg := range cgs {
		if _, err := os.Stat(filepath.Join(cg, "supervise")); !os.IsNotExist(err) {
			var left []string
			filepath.WalkDir(filepath.Join(cg, "supervise"), func(p string, e os.DirEntry, _ error) error {
				if e != nil && e.IsDir() {
					left = append(left, p)
				}
				return nil
			})
			t.Errorf("%s/supervise left behind after the upgrades: %v", cg, left)
		}
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d of a program outlived supervise", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
