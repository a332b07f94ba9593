package integration

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The running config follows its file (edits, ConfigMap symlink
// swaps, SIGHUP, supervisectl reload), programs restart when their watched
// files change, and a Procfile runs like foreman.
//
// Absence ("restarted once", "nothing happened") can only be seen by
// waiting: settle waits quietPeriod, several debounce periods, and the
// check follows. Presence is always waited for with eventually.

// quietPeriod is how long a test waits to see that nothing more happens:
// more than five times the 200ms default debounce, and more than the
// debounce of any test below.
const quietPeriod = 2 * time.Second

func settle() { time.Sleep(quietPeriod) }

// writeAtomic replaces file the way editors and config tools do: a new
// file beside it, renamed over it, so a reader never sees half of it.
func writeAtomic(t *testing.T, file, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(file), "."+filepath.Base(file)+".new")
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

type event struct {
	Time    time.Time `json:"time"`
	Program string    `json:"program"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Message string    `json:"message"`
}

// events returns `supervisectl events --json` (the recent history).
func (d *daemon) events() []event {
	d.t.Helper()
	out, code := d.ctl("events", "--json")
	if code != 0 {
		return nil
	}
	var evs []event
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev event
		if json.Unmarshal([]byte(line), &ev) == nil {
			evs = append(evs, ev)
		}
	}
	return evs
}

// reloads counts the reloads the supervisor applied (events "Reloaded").
func (d *daemon) reloads() int {
	n := 0
	for _, ev := range d.events() {
		if ev.Program == "supervisor" && ev.To == "Reloaded" {
			n++
		}
	}
	return n
}

// running waits until every name is Running and returns their pids.
func (d *daemon) running(names ...string) map[string]int {
	d.t.Helper()
	var pids map[string]int
	eventually(d.t, strings.Join(names, ", ")+" running", 60*time.Second, func() bool {
		s := d.status()
		pids = map[string]int{}
		for _, n := range names {
			if s[n].State != "Running" || s[n].Pid == 0 {
				return false
			}
			pids[n] = s[n].Pid
		}
		return true
	})
	return pids
}

// samePids checks that the programs still run with the pids they had.
func (d *daemon) samePids(what string, want map[string]int) {
	d.t.Helper()
	s := d.status()
	for name, pid := range want {
		if got := s[name]; got.State != "Running" || got.Pid != pid {
			d.t.Errorf("%s: %s is %s pid %d, want still Running with pid %d", what, name, got.State, got.Pid, pid)
		}
	}
}

const reloadBase = `
[program.a]
command = ["sleep", "1000"]
[program.b]
command = ["sleep", "1001"]
[program.c]
command = ["sleep", "1002"]
`

func TestReloadAddRemoveChange(t *testing.T) {
	dir, file := writeConfig(t, reloadBase)
	d := startDaemon(t, dir, file)
	pids := d.running("a", "b", "c")

	// Add: written in place, as `echo >>` or an editor without backups do.
	added := reloadBase + `
[program.d]
command = ["sh", "-c", "date +%s%N >> d.starts; exec sleep 1003"]
`
	written := time.Now()
	if err := os.WriteFile(file, []byte(added), 0o644); err != nil {
		t.Fatal(err)
	}
	starts := filepath.Join(dir, "d.starts")
	eventually(t, "d started after the edit", 30*time.Second, func() bool { return len(startTimes(t, starts)) > 0 })
	// The issue asks for "within a second"; on a loaded 2-core CI box the
	// bound is doubled. The figure is logged.
	took := startTimes(t, starts)[0].Sub(written)
	t.Logf("edit to new program running: %v", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("d started %v after the edit, want within a second (2s allowed under load)", took)
	}
	pids["d"] = d.running("d")["d"]
	d.samePids("after adding d", pids)

	// Remove b: its process is stopped, the others are untouched.
	removed := strings.Replace(added, "[program.b]\ncommand = [\"sleep\", \"1001\"]\n", "", 1)
	writeAtomic(t, file, removed)
	eventually(t, "b gone", 30*time.Second, func() bool {
		_, listed := d.status()["b"]
		return !listed && !alive(pids["b"])
	})
	delete(pids, "b")
	d.samePids("after removing b", pids)

	// Change c's command: c alone restarts.
	changed := strings.Replace(removed, `["sleep", "1002"]`, `["sleep", "1012"]`, 1)
	writeAtomic(t, file, changed)
	eventually(t, "c restarted with its new command", 30*time.Second, func() bool {
		s := d.status()["c"]
		return s.State == "Running" && s.Pid != pids["c"]
	})
	if alive(pids["c"]) {
		t.Error("c's old process still runs")
	}
	delete(pids, "c")
	d.samePids("after changing c", pids)
	pids["c"] = d.running("c")["c"]
	if cmdline(pids["c"]) != "sleep\x001012\x00" {
		t.Errorf("c runs %q, want sleep 1012", cmdline(pids["c"]))
	}

	// Change only a's backoff: the reload applies, nobody restarts.
	n := d.reloads()
	writeAtomic(t, file, changed+"\n[program.a.backoff]\ninitial = \"1s\"\nmax = \"2s\"\n")
	eventually(t, "the backoff-only reload applied", 30*time.Second, func() bool { return d.reloads() > n })
	d.samePids("after changing a's backoff", pids)
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return string(b)
}

func TestReloadBrokenConfigKeepsRunning(t *testing.T) {
	dir, file := writeConfig(t, reloadBase)
	d := startDaemon(t, dir, file)
	pids := d.running("a", "b", "c")

	broken := `
[program.a]
command = ["sleep", "1000"]
restart = "sometimes"
[program.b]
command = ["sleep", "1001"]
[program.c]
command = ["sleep", "1002"]
[program.e]
command = ["sleep", "1004"]
`
	writeAtomic(t, file, broken)
	const where = "supervise.toml:4: program.a.restart"
	var failed event
	eventually(t, "a ReloadFailed event naming the line", 30*time.Second, func() bool {
		for _, ev := range d.events() {
			if ev.To == "ReloadFailed" && strings.Contains(ev.Message, where) {
				failed = ev
				return true
			}
		}
		return false
	})
	t.Logf("event: %s %s → %s: %s", failed.Program, failed.From, failed.To, failed.Message)
	eventually(t, "the error in the supervisor's log", 30*time.Second, func() bool {
		return strings.Contains(d.stderr.String(), where)
	})
	if out, _ := d.ctl("events"); !strings.Contains(out, where) {
		t.Errorf("supervisectl events does not show the error:\n%s", out)
	}
	if _, started := d.status()["e"]; started {
		t.Error("a program of the refused file was started")
	}
	d.samePids("after the broken edit", pids)

	// Fixing the file applies it, e included.
	writeAtomic(t, file, strings.Replace(broken, "restart = \"sometimes\"\n", "", 1))
	d.running("e")
	d.samePids("after the fix", pids)
}

// A Kubernetes ConfigMap volume: supervise.toml -> ..data/supervise.toml,
// ..data -> ..2026_01_01. An update writes a new timestamped directory and
// renames a new ..data link over the old one.
func TestReloadConfigMapSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	mkTimestamped := func(name, data string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "supervise.toml"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkTimestamped("..2026_01_01", reloadBase)
	must(t, os.Symlink("..2026_01_01", filepath.Join(dir, "..data")))
	file := filepath.Join(dir, "supervise.toml")
	must(t, os.Symlink("..data/supervise.toml", file))
	d := startDaemon(t, dir, file)
	pids := d.running("a", "b", "c")

	mkTimestamped("..2026_01_02", reloadBase+"\n[program.e]\ncommand = [\"sleep\", \"1004\"]\n")
	must(t, os.Symlink("..2026_01_02", filepath.Join(dir, "..data_tmp")))
	must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	must(t, os.RemoveAll(filepath.Join(dir, "..2026_01_01")))
	d.running("e")
	d.samePids("after the swap", pids)
}

func TestReloadOnSIGHUPAndCtl(t *testing.T) {
	dir, file := writeConfig(t, "[supervisor]\nwatch_config = false\n"+reloadBase)
	d := startDaemon(t, dir, file)
	pids := d.running("a", "b", "c")

	edited := "[supervisor]\nwatch_config = false\n" + reloadBase + "\n[program.e]\ncommand = [\"sleep\", \"1004\"]\n"
	writeAtomic(t, file, edited)
	settle()
	if _, started := d.status()["e"]; started {
		t.Error("watch_config = false, yet an edit was applied without SIGHUP")
	}
	d.signal(syscall.SIGHUP)
	d.running("e")
	d.samePids("after SIGHUP", pids)

	writeAtomic(t, file, edited+"\n[program.f]\ncommand = [\"sleep\", \"1005\"]\n")
	d.ctlOK("reload")
	d.running("f")
	d.samePids("after supervisectl reload", pids)
}

// watchConfig is a program that logs each start and restarts when src
// changes, beside one that watches nothing.
func watchConfig(watch string) string {
	return `
[program.app]
command = ["sh", "-c", "date +%s%N >> starts; exec sleep 1000"]
[program.app.watch]
paths = ["src"]
` + watch + `
[program.other]
command = ["sleep", "1001"]
`
}

func startWatching(t *testing.T, watch string, files ...string) (d *daemon, dir string, pids map[string]int) {
	t.Helper()
	dir, file := writeConfig(t, watchConfig(watch))
	for _, f := range append([]string{"src/main.go"}, files...) {
		p := filepath.Join(dir, f)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte("package main\n"), 0o644))
	}
	d = startDaemon(t, dir, file)
	pids = d.running("app", "other")
	eventually(t, "app's first start logged", 30*time.Second, func() bool { return len(startTimes(t, filepath.Join(dir, "starts"))) == 1 })
	return d, dir, pids
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func touch(t *testing.T, paths ...string) {
	t.Helper()
	now := time.Now()
	for _, p := range paths {
		must(t, os.Chtimes(p, now, now))
	}
}

// restartedOnce waits for app's second start, then checks no third comes.
func restartedOnce(t *testing.T, d *daemon, dir string, pids map[string]int, want int) {
	t.Helper()
	starts := filepath.Join(dir, "starts")
	eventually(t, fmt.Sprintf("app start #%d", want), 30*time.Second, func() bool { return len(startTimes(t, starts)) >= want })
	settle()
	if n := len(startTimes(t, starts)); n != want {
		t.Errorf("app started %d times, want %d", n, want)
	}
	s := d.status()
	if s["app"].State != "Running" || s["app"].Pid == pids["app"] {
		t.Errorf("app is %s pid %d (was %d), want Running with a new pid", s["app"].State, s["app"].Pid, pids["app"])
	}
	d.samePids("a program watching nothing", map[string]int{"other": pids["other"]})
}

func TestWatchTouchRestartsOnce(t *testing.T) {
	d, dir, pids := startWatching(t, "")
	touch(t, filepath.Join(dir, "src/main.go"))
	restartedOnce(t, d, dir, pids, 2)

	// A file in a directory created after the start counts too.
	pids["app"] = d.running("app")["app"]
	must(t, os.MkdirAll(filepath.Join(dir, "src/pkg/deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "src/pkg/deep/x.go"), []byte("package deep\n"), 0o644))
	restartedOnce(t, d, dir, pids, 3)
}

func TestWatchBurstRestartsOnce(t *testing.T) {
	var files []string
	for i := range 2000 {
		files = append(files, fmt.Sprintf("src/many/f%04d.go", i))
	}
	// A whole second of quiet: the burst must not be cut in two by a
	// loaded machine pausing the test between two touches.
	d, dir, pids := startWatching(t, `debounce = "1s"`, files...)
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(dir, f))
	}
	touch(t, paths...)
	restartedOnce(t, d, dir, pids, 2)
}

func TestWatchExcludedFileDoesNothing(t *testing.T) {
	d, dir, pids := startWatching(t, `exclude = ["*.log", "tmp"]`, "src/tmp/cache.go")
	must(t, os.WriteFile(filepath.Join(dir, "src/app.log"), []byte("x\n"), 0o644))
	touch(t, filepath.Join(dir, "src/tmp/cache.go"))
	must(t, os.WriteFile(filepath.Join(dir, "src/.main.go.swp"), []byte("swap"), 0o644)) // editor files: always
	must(t, os.WriteFile(filepath.Join(dir, "outside.go"), []byte("x"), 0o644))          // not under paths
	settle()
	if n := len(startTimes(t, filepath.Join(dir, "starts"))); n != 1 {
		t.Errorf("app started %d times after touching excluded files, want 1", n)
	}
	d.samePids("after touching excluded files", pids)
	// The watch is live: a file that is not excluded restarts app.
	touch(t, filepath.Join(dir, "src/main.go"))
	restartedOnce(t, d, dir, pids, 2)
}

func TestWatchSignalInsteadOfRestart(t *testing.T) {
	dir, file := writeConfig(t, `
[program.app]
command = ["sh", "-c", "trap 'echo hup >> hups' HUP; date +%s%N >> starts; while :; do sleep 0.1; done"]
[program.app.watch]
paths = ["src"]
signal = "HUP"
`)
	must(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	d := startDaemon(t, dir, file)
	pids := d.running("app")
	eventually(t, "app's first start logged", 30*time.Second, func() bool { return len(startTimes(t, filepath.Join(dir, "starts"))) == 1 })
	must(t, os.WriteFile(filepath.Join(dir, "src/main.go"), []byte("package main\n"), 0o644))
	eventually(t, "app got SIGHUP", 30*time.Second, func() bool { return len(readLines(t, filepath.Join(dir, "hups"))) >= 1 })
	settle()
	if n := len(readLines(t, filepath.Join(dir, "hups"))); n != 1 {
		t.Errorf("app got %d HUPs, want 1", n)
	}
	if n := len(startTimes(t, filepath.Join(dir, "starts"))); n != 1 {
		t.Errorf("app started %d times, want 1 (signalled, not restarted)", n)
	}
	d.samePids("after the HUP", pids)
}

// The dev runner: a Procfile with three process types and a .env runs with
// foreman's PORTs and "name | " prefixes; SIGINT stops them all gracefully.
func TestProcfileDevRunner(t *testing.T) {
	dir := t.TempDir()
	proc := func(name string) string {
		// The trap first: the test signals once it has seen the line.
		return fmt.Sprintf(`%s: trap 'echo "%s stopping"; exit 0' TERM INT; echo "%s PORT=$PORT GREETING=$GREETING"; sleep 1000 & wait $!`, name, name, name)
	}
	procfile := filepath.Join(dir, "Procfile")
	must(t, os.WriteFile(procfile, []byte("# dev\n"+proc("web")+"\n"+proc("worker")+"\n\n"+proc("clock")+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, ".env"), []byte("GREETING='hello from .env'\n"), 0o644))
	d := startDaemon(t, dir, procfile)
	pids := d.running("web", "worker", "clock")
	for name, port := range map[string]int{"web": 5000, "worker": 5100, "clock": 5200} {
		re := regexp.MustCompile(fmt.Sprintf(`(?m)^%s *\| %s PORT=%d GREETING=hello from \.env$`, name, name, port))
		eventually(t, name+"'s prefixed line with PORT "+fmt.Sprint(port), 30*time.Second, func() bool { return re.MatchString(d.stdout.String()) })
	}

	d.signal(syscall.SIGINT)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Errorf("supervise exited %d after SIGINT, want 0", code)
	}
	for name, pid := range pids {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^%s *\| %s stopping$`, name, name)).MatchString(d.stdout.String()) {
			t.Errorf("%s did not stop gracefully (its trap did not run)", name)
		}
		if alive(pid) {
			t.Errorf("%s (pid %d) still runs", name, pid)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s", tail(d.stdout.String(), 40))
	}
}

// TestBenchWatchRestartLatency is a benchmark, not a test: the delay from
// a file write to the new process running, with debounce = "0s", median
// of 100 edits. Run it with
//
//	SUPERVISE_BENCH=1 go test -v -run BenchWatchRestart ./integration/
//
// (or with any -bench flag). Each edit renames a finished file into the
// watched directory (one event, as an editor's save), and the new process
// writes its start time (CLOCK_REALTIME, as time.Now) first thing.
func TestBenchWatchRestartLatency(t *testing.T) {
	if f := flag.Lookup("test.bench"); (f == nil || f.Value.String() == "") && os.Getenv("SUPERVISE_BENCH") != "1" {
		t.Skip("a benchmark: run with SUPERVISE_BENCH=1 or -bench")
	}
	dir, file := writeConfig(t, `
[program.app]
command = ["sh", "-c", "date +%s%N >> starts; exec sleep 1000"]
[program.app.watch]
paths = ["src"]
debounce = "0s"
`)
	must(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	d := startDaemon(t, dir, file)
	d.running("app")
	starts := filepath.Join(dir, "starts")
	eventually(t, "first start", 30*time.Second, func() bool { return len(startTimes(t, starts)) == 1 })

	const edits = 100
	var lat []time.Duration
	for i := range edits {
		n := len(startTimes(t, starts))
		tmp := filepath.Join(dir, "main.go.new")
		must(t, os.WriteFile(tmp, []byte(fmt.Sprintf("package main // %d\n", i)), 0o644))
		written := time.Now()
		must(t, os.Rename(tmp, filepath.Join(dir, "src/main.go")))
		eventually(t, fmt.Sprintf("restart #%d", i+1), 30*time.Second, func() bool { return len(startTimes(t, starts)) > n })
		lat = append(lat, startTimes(t, starts)[n].Sub(written))
		// The next edit waits for this run to be up, so restarts never overlap.
		d.running("app")
	}
	if n := len(startTimes(t, starts)); n != edits+1 {
		t.Errorf("%d starts for %d edits, want one restart per edit", n, edits)
	}
	slices.Sort(lat)
	pct := func(p int) time.Duration { return lat[(len(lat)-1)*p/100].Round(10 * time.Microsecond) }
	msg := fmt.Sprintf("watch restart latency, debounce 0s, %d edits: min %v, median %v, p90 %v, max %v",
		edits, pct(0), pct(50), pct(90), pct(100))
	t.Log(msg)
	fmt.Println(msg)
}
