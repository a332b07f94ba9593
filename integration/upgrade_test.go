package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Upgrades in place: supervise execs the binary now at its path and the
// new one takes over every running program.

// upgradeBinaries are the builds the upgrade tests swap in: two versions,
// one that reads another state format, one that refuses every take-over
// (the fall-back to the old binary after the exec).
var upgradeBinaries = sync.OnceValues(func() (map[string]string, error) {
	dir, err := os.MkdirTemp("", "supervise-upgrade-")
	if err != nil {
		return nil, err
	}
	const pkg = "github.com/supervise-dev/supervise"
	builds := map[string]string{
		"v1":       "-X " + pkg + "/internal/version.Version=v1.0.0-test",
		"v2":       "-X " + pkg + "/internal/version.Version=v2.0.0-test",
		"format99": "-X " + pkg + "/internal/version.Version=v9.9.9-test -X main.handoverFormat=99",
		"refuses":  "-X " + pkg + "/internal/version.Version=v3.0.0-refuses -X main.takeoverFault=injected",
		"slow":     "-X " + pkg + "/internal/version.Version=v2.0.0-slow -X main.takeoverDelay=5s",
	}
	out := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for name, flags := range builds {
		wg.Go(func() {
			path := filepath.Join(dir, name)
			cmd := exec.Command("go", "build", "-o", path, "-ldflags", flags, "../cmd/supervise")
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			b, err := cmd.CombinedOutput()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("building %s: %v\n%s", name, err, b))
			}
			out[name] = path
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return out, nil
})

func upgradeBuild(t *testing.T, name string) string {
	t.Helper()
	bins, err := upgradeBinaries()
	if err != nil {
		t.Fatal(err)
	}
	return bins[name]
}

// installBinary puts src at dst as a package upgrade does: a new file
// renamed over the old one (the running binary keeps its inode).
func installBinary(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".new"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// installV1 puts a copy of the v1 build in dir/bin, where an upgrade may
// replace it, and returns its path.
func installV1(t *testing.T, dir string) string {
	t.Helper()
	exe := filepath.Join(dir, "bin", "supervise")
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	installBinary(t, upgradeBuild(t, "v1"), exe, 0o755)
	return exe
}

// upgradeDaemon starts supervise from its own copy of the v1 build.
func upgradeDaemon(t *testing.T, toml string) (d *daemon, exe string) {
	t.Helper()
	needRoot(t)
	dir, file := writeConfig(t, toml)
	exe = installV1(t, dir)
	return startDaemonBinary(t, exe, dir, file), exe
}

// upgrade runs `supervisectl upgrade` and returns what it said, failing
// the test (saying what) unless it succeeded.
func (d *daemon) upgrade(what string) string {
	d.t.Helper()
	out, code := d.ctl("upgrade")
	if code != 0 {
		d.t.Fatalf("%s: exit %d: %s", what, code, out)
	}
	return out
}

// upgradeTo installs the build named build at exe, as a package upgrade
// does, and upgrades supervise to it (see upgrade).
func (d *daemon) upgradeTo(exe, build string) string {
	d.t.Helper()
	installBinary(d.t, upgradeBuild(d.t, build), exe, 0o755)
	return d.upgrade("upgrade to " + build)
}

// shutdown runs `supervisectl shutdown`, failing the test unless it
// succeeded, and returns supervise's exit code once it exited (waiting at
// most timeout).
func (d *daemon) shutdown(timeout time.Duration) int {
	d.t.Helper()
	d.ctlOK("shutdown")
	return d.wait(timeout)
}

type versionInfo struct {
	Version  string `json:"version"`
	Pid      int    `json:"pid"`
	Exe      string `json:"exe"`
	Upgrades []struct {
		Generation int    `json:"generation"`
		From       string `json:"from"`
		To         string `json:"to"`
		Error      string `json:"error"`
	} `json:"upgrades"`
}

func (d *daemon) version() versionInfo {
	d.t.Helper()
	out, code := d.ctl("version", "--json")
	if code != 0 {
		d.t.Fatalf("supervisectl version: exit %d: %s", code, out)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		d.t.Fatalf("version --json: %v: %s", err, out)
	}
	return v
}

// pids is every program's pid, by name.
func (d *daemon) pids() map[string]int {
	d.t.Helper()
	m := map[string]int{}
	for name, st := range d.status() {
		m[name] = st.Pid
	}
	return m
}

// counterProgram writes numbered lines, each in two writes (so that an
// upgrade may fall between the halves of a line), pausing between lines
// on a read that times out (no process forked per line).
func counterProgram(fifo string, pause string) string {
	return fmt.Sprintf(`["bash", "-c", "exec 3<>%s; i=0; while :; do i=$((i+1)); printf '%%d-' $i; printf 'x\\n'; read -t %s -u 3; done"]`, fifo, pause)
}

var lineRE = regexp.MustCompile(`^(\d+)-x$`)

// checkCounted checks a counter program's log: 1, 2, 3 … with no gap, no
// duplicate and no line cut; only the very last may be unfinished (the
// program was killed between its two writes).
func checkCounted(t *testing.T, file string) int {
	t.Helper()
	return checkCountedLines(t, file, readLines(t, file))
}

// checkCountedLines is checkCounted of the lines of what.
func checkCountedLines(t *testing.T, what string, lines []string) int {
	t.Helper()
	want := 1
	for i, l := range lines {
		m := lineRE.FindStringSubmatch(l)
		if m == nil {
			if i == len(lines)-1 && strings.HasSuffix(l, "-") {
				break
			}
			t.Fatalf("%s: line %d is %q, want %d-x", what, i+1, l, want)
		}
		if n, _ := strconv.Atoi(m[1]); n != want {
			t.Fatalf("%s: line %d is %q, want %d-x (a gap or a duplicate)", what, i+1, l, want)
		}
		want++
	}
	return want - 1
}

// checkExe checks that the supervisor runs the file now at exe.
func checkExe(t *testing.T, pid int, exe string) {
	t.Helper()
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		t.Fatal(err)
	}
	if link != exe {
		t.Fatalf("/proc/%d/exe is %q, want %q", pid, link, exe)
	}
	var a, b syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/exe", pid), &a); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(exe, &b); err != nil {
		t.Fatal(err)
	}
	if a.Ino != b.Ino || a.Dev != b.Dev {
		t.Fatalf("/proc/%d/exe is not the file now at %s", pid, exe)
	}
}

// TestUpgradeKeepsEveryProgram: many programs writing numbered lines, many
// upgrades in a row, the binary file replaced before some of them: every
// pid stays, every log is gapless with no duplicate and no cut line, the
// control socket and the HTTP listener answer after each, and the
// supervisor runs the file now at its path.
func TestUpgradeKeepsEveryProgram(t *testing.T) {
	programs, upgrades := 200, 50
	if v := os.Getenv("SUPERVISE_UPGRADE_TEST_SIZE"); v != "" {
		fmt.Sscanf(v, "%d,%d", &programs, &upgrades)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pause")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg strings.Builder
	cfg.WriteString("[supervisor]\nhttp = \"127.0.0.1:0\"\n")
	for i := range programs {
		fmt.Fprintf(&cfg, "\n[program.p%d]\ncommand = %s\nstdout = { file = %q }\n",
			i, counterProgram(fifo, "0.2"), filepath.Join(dir, fmt.Sprintf("p%d.log", i)))
	}
	port := freePort(t)
	// web has a readiness probe: ready it stays, across every upgrade.
	fmt.Fprintf(&cfg, "\n[program.web]\ncommand = [\"sleep\", \"infinity\"]\nlisten = [\"tcp://127.0.0.1:%d?name=web\"]\n"+
		"[program.web.probes.readiness]\ntcp = \"127.0.0.1:%d\"\nperiod = \"1s\"\n", port, port)
	d, exe := upgradeDaemon(t, cfg.String())
	addr := d.httpAddr()
	eventually(t, "every program running and ready", 120*time.Second, func() bool {
		st := d.status()
		n := 0
		for _, p := range st {
			if p.State == "Running" && p.Pid > 0 {
				n++
			}
		}
		c, _ := get(t, "GET", "http://"+addr+"/readyz", nil)
		return n == programs+1 && c == 200
	})
	before := d.pids()
	pid := d.cmd.Process.Pid
	versions := []string{"v1", "v2"}
	current := "v1"
	for u := 1; u <= upgrades; u++ {
		if u%5 == 0 {
			// A package upgrade: the other version renamed over the file.
			next := versions[(u/5)%2]
			installBinary(t, upgradeBuild(t, next), exe, 0o755)
			current = next
		}
		d.upgrade(fmt.Sprintf("upgrade %d", u))
		if got := d.pids(); !mapsEqual(got, before) {
			t.Fatalf("upgrade %d: pids changed:\nbefore %v\nafter  %v", u, before, got)
		}
		if c, body := get(t, "GET", "http://"+addr+"/healthz", nil); c != 200 {
			t.Fatalf("upgrade %d: /healthz: %d %s", u, c, body)
		}
		if c, body := get(t, "GET", "http://"+addr+"/readyz", nil); c != 200 {
			t.Fatalf("upgrade %d: /readyz: %d %s", u, c, body)
		}
		v := d.version()
		if v.Pid != pid || !strings.HasPrefix(v.Version, current) {
			t.Fatalf("upgrade %d: version %+v, want %s in pid %d", u, v, current, pid)
		}
		checkExe(t, pid, exe)
		// The held listen socket never closed: a connection is taken.
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 10*time.Second); err != nil {
			t.Fatalf("upgrade %d: the held listen socket: %v", u, err)
		} else {
			c.Close()
		}
	}
	if out, _ := d.ctl("status"); !strings.Contains(out, "upgraded from v") {
		t.Errorf("status does not tell the last upgrade:\n%s", tail(out, 3))
	}
	events, _ := d.ctl("events")
	if !strings.Contains(events, "upgraded supervise from v1.0.0-test to v2.0.0-test") {
		t.Errorf("events do not tell the upgrade from v1 to v2:\n%s", tail(events, 20))
	}
	// Lines keep coming after the last upgrade.
	time.Sleep(500 * time.Millisecond)
	if code := d.shutdown(120 * time.Second); code != 0 {
		t.Errorf("supervise exited %d", code)
	}
	for i := range programs {
		if n := checkCounted(t, filepath.Join(dir, fmt.Sprintf("p%d.log", i))); n < 2 {
			t.Errorf("p%d wrote %d lines", i, n)
		}
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestUpgradeRefusesABadBinary: a new binary that exits at once, one that
// is not executable and one that reads another state format are refused
// before anything changes: the command exits 1 naming the cause, the
// programs and the old binary carry on, and a good upgrade works after.
func TestUpgradeRefusesABadBinary(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "a.log")
	d, exe := upgradeDaemon(t, fmt.Sprintf("[program.a]\ncommand = [\"bash\", \"-c\", \"i=0; while :; do i=$((i+1)); echo $i-x; sleep 0.05; done\"]\nstdout = { file = %q }\n", log))
	d.running("a")
	pid := d.status()["a"].Pid
	good, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	exitsAtOnce := filepath.Join(dir, "exits")
	if err := os.WriteFile(exitsAtOnce, []byte("#!/bin/sh\necho broken >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, src string
		mode      os.FileMode
		cause     string
	}{
		{"exits at once", exitsAtOnce, 0o755, "exited at once (status 3"},
		{"not executable", upgradeBuild(t, "v2"), 0o644, "is not executable"},
		{"unknown state format", upgradeBuild(t, "format99"), 0o755, "reads state formats 1,99, not this one's (2)"},
	}
	for _, c := range cases {
		installBinary(t, c.src, exe, c.mode)
		out, code := d.ctl("upgrade")
		if code != 1 || !strings.Contains(out, c.cause) {
			t.Errorf("%s: upgrade exited %d, want 1 naming %q:\n%s", c.name, code, c.cause, out)
		}
		if v := d.version(); v.Version != "v1.0.0-test" {
			t.Errorf("%s: supervise is %s now, want v1.0.0-test", c.name, v.Version)
		}
		if st := d.status()["a"]; st.Pid != pid || st.State != "Running" {
			t.Errorf("%s: a is %+v, want pid %d running", c.name, st, pid)
		}
	}
	events, _ := d.ctl("events")
	if !strings.Contains(events, "upgrade refused, nothing changed") {
		t.Errorf("no event tells of the refused upgrades:\n%s", tail(events, 10))
	}
	_ = good
	if out := d.upgradeTo(exe, "v2"); !strings.Contains(out, "v1.0.0-test → v2.0.0-test") {
		t.Fatalf("good upgrade: %s", out)
	}
	if out, _ := d.ctl("status"); !strings.Contains(out, "supervise v2.0.0-test (pid "+strconv.Itoa(d.cmd.Process.Pid)+"), upgraded from v1.0.0-test") {
		t.Errorf("status does not say the version before and after:\n%s", out)
	}
	if st := d.status()["a"]; st.Pid != pid {
		t.Errorf("after the good upgrade a has pid %d, want %d", st.Pid, pid)
	}
	d.shutdown(60 * time.Second)
	checkCounted(t, log)
}

// TestUpgradeFallsBackToTheOldBinary: a new binary that starts but cannot
// take over execs the old one again, which takes its programs back; the
// command exits 1 naming the cause. Then SIGUSR2 upgrades as the verb does.
func TestUpgradeFallsBackToTheOldBinary(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "a.log")
	d, exe := upgradeDaemon(t, fmt.Sprintf("[program.a]\ncommand = [\"bash\", \"-c\", \"i=0; while :; do i=$((i+1)); echo $i-x; sleep 0.05; done\"]\nstdout = { file = %q }\n", log))
	d.running("a")
	pid := d.status()["a"].Pid
	installBinary(t, upgradeBuild(t, "refuses"), exe, 0o755)
	out, code := d.ctl("upgrade")
	if code != 1 || !strings.Contains(out, "refusing the take-over: injected") {
		t.Fatalf("upgrade exited %d, want 1 naming the refusal:\n%s", code, out)
	}
	v := d.version()
	if v.Version != "v1.0.0-test" || v.Pid != d.cmd.Process.Pid {
		t.Fatalf("after the fall-back supervise is %+v, want v1.0.0-test in the same pid", v)
	}
	if st := d.status()["a"]; st.Pid != pid || st.State != "Running" {
		t.Fatalf("a is %+v, want pid %d running", st, pid)
	}
	// The old binary supervises as before: a kill is a restart.
	syscall.Kill(pid, syscall.SIGKILL)
	eventually(t, "a restarted", 60*time.Second, func() bool {
		st := d.status()["a"]
		return st.Pid != pid && st.Pid != 0 && st.State == "Running"
	})
	// SIGUSR2 is the signal form of the verb.
	pid = d.status()["a"].Pid
	installBinary(t, upgradeBuild(t, "v2"), exe, 0o755)
	d.signal(syscall.SIGUSR2)
	eventually(t, "v2 after SIGUSR2", 60*time.Second, func() bool {
		out, code := d.ctl("version", "--json")
		return code == 0 && strings.Contains(out, `"version":"v2.0.0-test"`)
	})
	if st := d.status()["a"]; st.Pid != pid {
		t.Errorf("after SIGUSR2 a has pid %d, want %d", st.Pid, pid)
	}
	d.shutdown(60 * time.Second)
}

// TestUpgradeAsPID1ReapsOrphans: supervise as PID 1 of a pid namespace,
// upgraded again and again while a program leaves orphans behind (which
// PID 1 reaps) and another exits now and then (its exits, some during an
// exec, are handled as any other): no zombie is left, and the programs
// that ran on keep their pids.
func TestUpgradeAsPID1ReapsOrphans(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	dir, file := writeConfig(t, `
[program.orphans]
command = ["sh", "-c", "while :; do (sleep 0.01 &); sleep 0.02; done"]
[program.short]
command = ["sleep", "0.3"]
restart = "always"
backoff = { initial = "10ms", max = "10ms" }
[program.steady]
command = ["sleep", "infinity"]
`)
	exe := installV1(t, dir)
	d := startDaemonUnder(t, inPidNamespace, exe, dir, file)
	eventually(t, "every program running", 60*time.Second, func() bool {
		st := d.status()
		return st["orphans"].State == "Running" && st["steady"].State == "Running" && st["short"].Pid > 0
	})
	if v := d.version(); v.Pid != 1 {
		t.Fatalf("supervise is pid %d in its namespace, want 1", v.Pid)
	}
	sup := childOf(t, d.cmd.Process.Pid)
	steady := d.status()["steady"].Pid
	for u := 1; u <= 10; u++ {
		if u == 5 {
			installBinary(t, upgradeBuild(t, "v2"), exe, 0o755)
		}
		d.upgrade(fmt.Sprintf("upgrade %d", u))
		if got := d.status()["steady"].Pid; got != steady {
			t.Fatalf("upgrade %d: steady has pid %d, want %d", u, got, steady)
		}
	}
	if v := d.version(); !strings.HasPrefix(v.Version, "v2") {
		t.Fatalf("supervise is %s, want v2", v.Version)
	}
	restarts := d.status()["short"].Restarts
	eventually(t, "short restarted after the upgrades", 60*time.Second, func() bool {
		st := d.status()["short"]
		return st.Restarts > restarts
	})
	d.ctlOK("stop", "orphans", "short")
	eventually(t, "no zombie left under supervise", 60*time.Second, func() bool {
		return len(zombiesOf(sup)) == 0
	})
	d.ctlOK("shutdown")
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		t.Fatal("supervise did not exit")
	}
}

// childOf is the one child of pid (unshare's: supervise).
func childOf(t *testing.T, pid int) int {
	t.Helper()
	var child int
	eventually(t, "unshare's child", 30*time.Second, func() bool {
		kids := childPids(pid)
		if len(kids) != 1 {
			return false
		}
		child = kids[0]
		return true
	})
	return child
}

// TestUpgradeWithRelativeRoot: the new binary parses the same command
// line, so it starts where supervise was started: a relative --root and
// config path mean what they meant.
func TestUpgradeWithRelativeRoot(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	app := filepath.Join(dir, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "supervise.toml"), []byte("[program.a]\ncommand = [\"sleep\", \"infinity\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := installV1(t, dir)
	d := startDaemonBinary(t, exe, dir, "supervise.toml", "--root", "app")
	d.running("a")
	pid := d.status()["a"].Pid
	d.upgradeTo(exe, "v2")
	if v := d.version(); v.Version != "v2.0.0-test" {
		t.Fatalf("supervise is %s, want v2.0.0-test", v.Version)
	}
	if st := d.status()["a"]; st.Pid != pid {
		t.Errorf("a has pid %d, want %d", st.Pid, pid)
	}
}

// TestUpgradeKeepsTheParentDeathSignal: a supervise its parent started
// with a parent-death signal (unshare --kill-child; container runtimes do
// the same) still dies with its parent after an upgrade in place: the
// setting is the execing thread's, not the process's.
func TestUpgradeKeepsTheParentDeathSignal(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	dir, file := writeConfig(t, `
[program.a]
command = ["sleep", "infinity"]
`)
	exe := installV1(t, dir)
	d := startDaemonUnder(t, []string{"unshare", "--fork", "--kill-child"}, exe, dir, file)
	sup := childOf(t, d.cmd.Process.Pid)
	t.Cleanup(func() { syscall.Kill(sup, syscall.SIGKILL) }) // when it outlived its parent
	d.running("a")
	for u := range 3 {
		d.upgrade(fmt.Sprintf("upgrade %d", u+1))
	}
	if v := d.version(); v.Pid != sup {
		t.Fatalf("supervise is pid %d after the upgrades, want %d", v.Pid, sup)
	}
	_ = d.cmd.Process.Kill() // the parent dies: the kernel must end supervise
	eventually(t, "supervise ended with its parent", 30*time.Second, func() bool {
		return syscall.Kill(sup, 0) == syscall.ESRCH || isZombie(sup)
	})
}

// TestUpgradeKeepsANamespacedSandbox: a program in its own pid and mount
// namespaces (a sandbox init of its own) survives upgrades with its pid
// and its init, is then restarted through the adopted init and stopped,
// and leaves no cgroup behind.
func TestUpgradeKeepsANamespacedSandbox(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pause")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "ns.log")
	flag := filepath.Join(dir, "ready")
	d, exe := upgradeDaemon(t, fmt.Sprintf(`
[program.nsbox]
command = %s
stdout = { file = %q }
[program.nsbox.sandbox]
namespaces = ["pid", "mount"]
# Run in the sandbox: ready once the flag is there, seen from inside.
[program.nsbox.probes.readiness]
command = ["sh", "-c", "test -f %s && grep -q supervise-init /proc/1/cmdline"]
period = "1s"

[program.plain]
command = ["sleep", "infinity"]
`, counterProgram(fifo, "0.1"), logFile, flag))
	d.running("nsbox", "plain")
	before := d.pids()
	nsPid := before["nsbox"]
	init := parentPid(t, nsPid)
	if init == d.cmd.Process.Pid {
		t.Fatalf("nsbox (pid %d) is a child of supervise: no sandbox init", nsPid)
	}
	for u := 1; u <= 3; u++ {
		if u == 2 {
			installBinary(t, upgradeBuild(t, "v2"), exe, 0o755)
		}
		d.upgrade(fmt.Sprintf("upgrade %d", u))
		if got := d.pids(); !mapsEqual(got, before) {
			t.Fatalf("upgrade %d: pids changed:\nbefore %v\nafter  %v", u, before, got)
		}
		if p := parentPid(t, nsPid); p != init {
			t.Fatalf("upgrade %d: nsbox's parent is %d, was its init %d", u, p, init)
		}
	}
	// The probe's command runs in the adopted sandbox.
	if err := writeFileNow(flag); err != nil {
		t.Fatal(err)
	}
	eventually(t, "nsbox ready by its probe run in the adopted sandbox", 60*time.Second, func() bool {
		r := d.healthStatus()["nsbox"].Ready
		return r != nil && *r
	})
	// An adopted program's exit is seen: a stop ends.
	d.ctlOK("stop", "plain")
	// The adopted init serves a restart and a stop.
	// Its lines across the upgrades: gapless, none twice, none cut.
	if n := checkCounted(t, logFile); n < 2 {
		t.Errorf("nsbox wrote %d lines", n)
	}
	d.ctlOK("restart", "nsbox")
	eventually(t, "nsbox running again with another pid", 60*time.Second, func() bool {
		st := d.status()["nsbox"]
		return st.State == "Running" && st.Pid > 0 && st.Pid != nsPid
	})
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", nsPid)); err == nil {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", nsPid)); !strings.Contains(string(b), ") Z") {
			t.Errorf("the first nsbox process (pid %d) outlived its restart", nsPid)
		}
	}
	d.ctlOK("stop", "nsbox")
	eventually(t, "nsbox stopped, its cgroup gone", 60*time.Second, func() bool {
		return d.status()["nsbox"].State == "Stopped" && len(programCgroups(t, "nsbox")) == 0
	})
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", init)); err == nil {
		t.Errorf("the first sandbox init (pid %d) is still there", init)
	}
	if code := d.shutdown(120 * time.Second); code != 0 {
		t.Errorf("supervise exited %d", code)
	}
}
