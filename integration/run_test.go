package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTimes reads the nanosecond timestamps a program appended at each start.
func startTimes(t *testing.T, file string) []time.Time {
	var out []time.Time
	for _, l := range readLines(t, file) {
		ns, err := strconv.ParseInt(strings.TrimSpace(l), 10, 64)
		if err == nil {
			out = append(out, time.Unix(0, ns))
		}
	}
	return out
}

// backoffLateness is how late a restart may come after its back-off on a
// loaded machine (forking a shell, the program's own start-up). Only
// lateness is widened: a restart is never allowed early, and the delays
// themselves are read from the supervisor's events, exactly.
const backoffLateness = 5 * time.Second

// backoffs waits for n back-offs of program and returns the delays the
// supervisor chose ("back-off 200ms" events), in order.
func backoffs(f *eventFeed, program string, n int) []string {
	var out []string
	for range n {
		ev := f.waitEvent(program+" into CrashLoopBackOff", 120*time.Second, func(ev event) bool {
			return ev.Program == program && ev.To == "CrashLoopBackOff"
		})
		out = append(out, strings.TrimPrefix(ev.Message, "back-off "))
	}
	return out
}

func TestCrashBackoffTiming(t *testing.T) {
	dir, file := writeConfig(t, `
[program.crash]
command = ["sh", "-c", "date +%s%N >> starts; exit 1"]
restart = "always"
[program.crash.backoff]
initial = "200ms"
max = "1600ms"
reset_after = "1h"
`)
	d := startDaemon(t, dir, file)
	f := d.followEvents()
	// The first restart is at once (no back-off), then 200ms doubling to
	// the 1.6s cap.
	want := []time.Duration{0, 200, 400, 800, 1600, 1600}
	got := backoffs(f, "crash", len(want)-1)
	if strings.Join(got, " ") != "200ms 400ms 800ms 1.6s 1.6s" {
		t.Errorf("back-offs %q, want 200ms 400ms 800ms 1.6s 1.6s\n%s", got, f.dump())
	}
	tr := f.transitions("crash")
	for i, s := range tr {
		if strings.HasPrefix(s, "Running→Exited") {
			if i+1 >= len(tr) || !strings.HasPrefix(tr[i+1], "Exited→Starting") {
				t.Errorf("the first restart must come at once, without a back-off: %q", tr)
			}
			break
		}
	}
	starts := filepath.Join(dir, "starts")
	eventually(t, "7 starts", 120*time.Second, func() bool { return len(startTimes(t, starts)) >= 7 })
	st := startTimes(t, starts)
	for i, w := range want {
		// Each start's stamp comes before that run's exit, from which
		// the back-off counts: the next stamp may not come earlier than
		// the back-off after it.
		gap := st[i+1].Sub(st[i])
		w *= time.Millisecond
		if gap < w || gap > w+backoffLateness {
			t.Errorf("gap %d = %v, want %v (never earlier, at most %v later)", i+1, gap.Round(time.Millisecond), w, backoffLateness)
		}
	}
	if !strings.Contains(d.stderr.String(), "to=CrashLoopBackOff") {
		t.Error("CrashLoopBackOff was never reported")
	}
	s := d.status()["crash"]
	if s.State != "CrashLoopBackOff" && s.State != "Starting" && s.State != "Running" && s.State != "Exited" {
		t.Errorf("state %q", s.State)
	}
}

func TestBackoffResetsAfterStableRun(t *testing.T) {
	dir, file := writeConfig(t, `
[program.flaky]
# Crashes at once, except the third run, which lasts longer than reset_after.
command = ["sh", "-c", "date +%s%N >> starts; n=$(wc -l < starts); [ $n -eq 3 ] && sleep 1.5; exit 1"]
[program.flaky.backoff]
initial = "300ms"
max = "600ms"
reset_after = "1s"
`)
	d := startDaemon(t, dir, file)
	f := d.followEvents()
	starts := filepath.Join(dir, "starts")
	// run 1 → at once; run 2 → 300ms; run 3 lasts 1.5s > reset_after →
	// the next crash restarts at once; run 4 → 300ms again, not 600ms.
	// The supervisor's events say which delay it chose after each exit.
	after := make([]string, 0, 4) // per exit: "at once" or the back-off
	for len(after) < 4 {
		f.waitEvent("flaky exits", 120*time.Second, func(ev event) bool { return ev.Program == "flaky" && ev.To == "Exited" })
		ev := f.waitEvent("flaky's next step", 120*time.Second, func(ev event) bool {
			return ev.Program == "flaky" && (ev.To == "CrashLoopBackOff" || ev.To == "Starting")
		})
		if ev.To == "Starting" {
			after = append(after, "at once")
		} else {
			after = append(after, strings.TrimPrefix(ev.Message, "back-off "))
		}
	}
	if got, want := strings.Join(after, ", "), "at once, 300ms, at once, 300ms"; got != want {
		t.Errorf("after each exit: %s; want %s\n%s", got, want, f.dump())
	}
	eventually(t, "5 starts", 120*time.Second, func() bool { return len(startTimes(t, starts)) >= 5 })
	st := startTimes(t, starts)
	gap := func(i int) time.Duration { return st[i].Sub(st[i-1]) }
	// Never early; late by what the machine costs at most.
	if g := gap(2); g < 300*time.Millisecond || g > 300*time.Millisecond+backoffLateness {
		t.Errorf("second restart after %v, want 300ms", g)
	}
	if g := gap(3); g < 1500*time.Millisecond {
		t.Errorf("the stable run lasted %v, want its 1.5s", g)
	}
	if g := gap(4); g < 300*time.Millisecond || g > 300*time.Millisecond+backoffLateness {
		t.Errorf("backoff did not start over: gap %v, want 300ms", g)
	}
}

func TestRestartPoliciesRealProcesses(t *testing.T) {
	dir, file := writeConfig(t, `
[defaults]
restart = "on-failure"
[defaults.backoff]
initial = "0s"
[program.ok]
command = ["sh", "-c", "echo x >> ok.runs; exit 0"]
[program.three]
command = ["sh", "-c", "echo x >> three.runs; [ $(wc -l < three.runs) -ge 3 ] && sleep 100; exit 3"]
[program.success3]
command = ["sh", "-c", "echo x >> success3.runs; exit 3"]
success_exit_codes = [3]
[program.blocker]
command = ["sleep", "100"]
`)
	d := startDaemon(t, dir, file)
	eventually(t, "three restarted", 30*time.Second, func() bool { return len(readLines(t, filepath.Join(dir, "three.runs"))) >= 3 })
	eventually(t, "states settle", 30*time.Second, func() bool {
		s := d.status()
		return s["ok"].State == "Completed" && s["success3"].State == "Completed" && s["three"].State == "Running"
	})
	for _, n := range []string{"ok", "success3"} {
		if got := len(readLines(t, filepath.Join(dir, n+".runs"))); got != 1 {
			t.Errorf("%s ran %d times, want 1", n, got)
		}
	}
}

func TestHooksRealProcesses(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, `
[program.web]
command = ["sh", "-c", "echo \"main $(hostname)\" >> hooks.log; exec sleep 100"]
[program.web.sandbox]
namespaces = ["uts"]
hostname = "websandbox"
[program.web.hooks.pre_start]
command = ["sh", "-c", "echo \"pre_start $(hostname) $SUPERVISE_PROGRAM\" >> hooks.log"]
[program.web.hooks.post_start]
command = ["sh", "-c", "echo \"post_start $(hostname)\" >> hooks.log"]
[program.web.hooks.pre_stop]
command = ["sh", "-c", "echo \"pre_stop $(hostname)\" >> hooks.log"]
[program.web.hooks.post_stop]
command = ["sh", "-c", "echo \"post_stop code=$SUPERVISE_EXIT_CODE signal=$SUPERVISE_EXIT_SIGNAL\" >> hooks.log"]

[program.badhook]
command = ["sleep", "100"]
[program.badhook.hooks.pre_start]
command = ["sh", "-c", "echo tried >> bad.log; exit 1"]
[program.badhook.backoff]
initial = "1h"

[program.slowhook]
command = ["sleep", "100"]
[program.slowhook.hooks.pre_start]
command = ["sh", "-c", "echo $$ >> slow.pid; exec sleep 100"]
timeout = "300ms"
[program.slowhook.backoff]
initial = "1h"
`)
	d := startDaemon(t, dir, file)
	d.running("web")
	d.ctlOK("stop", "web")
	eventually(t, "post_stop", 30*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "hooks.log"))
		return strings.Contains(string(b), "post_stop")
	})
	got := readLines(t, filepath.Join(dir, "hooks.log"))
	want := []string{"pre_start websandbox web", "main websandbox", "post_start websandbox", "pre_stop websandbox", "post_stop code=143 signal=TERM"}
	// post_start runs once the process has started, concurrently with it
	// (as in the kubelet): "main" and "post_start" may come in either order.
	if len(got) == len(want) && got[1] == want[2] && got[2] == want[1] {
		got[1], got[2] = got[2], got[1]
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("hooks.log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A failing pre_start: a crash, into backoff (the first retry is at once).
	eventually(t, "badhook in backoff", 30*time.Second, func() bool {
		s := d.status()["badhook"]
		return s.State == "CrashLoopBackOff" && s.LastExit != nil && s.LastExit.Reason == "HookError"
	})
	// A hook past its timeout is killed.
	eventually(t, "slowhook in backoff", 30*time.Second, func() bool { return d.status()["slowhook"].State == "CrashLoopBackOff" })
	for _, l := range readLines(t, filepath.Join(dir, "slow.pid")) {
		pid, _ := strconv.Atoi(l)
		eventually(t, "timed-out hook killed", 10*time.Second, func() bool { return !alive(pid) })
	}
}

func TestDependsOnStartAndStopOrder(t *testing.T) {
	dir, file := writeConfig(t, `
[program.b]
command = ["sh", "-c", "echo start b >> order; trap 'echo stop b >> order; exit 0' TERM; while :; do sleep 0.05; done"]
depends_on = ["a"]
[program.a]
command = ["sh", "-c", "trap 'echo stop a >> order; exit 0' TERM; touch a.ready; while :; do sleep 0.05; done"]
`)
	d := startDaemon(t, dir, file)
	eventually(t, "both running with their traps set", 30*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dir, "a.ready"))
		return err == nil && len(readLines(t, filepath.Join(dir, "order"))) == 1
	})
	d.signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	got := strings.Join(readLines(t, filepath.Join(dir, "order")), ", ")
	if want := "start b, stop b, stop a"; got != want {
		t.Errorf("order: %s, want %s", got, want)
	}
	// b was started only once a was running.
	log := d.stderr.String()
	aRunning := strings.Index(log, "program=a from=Starting to=Running")
	bStarting := strings.Index(log, "program=b from=Waiting to=Starting")
	if aRunning < 0 || bStarting < 0 || bStarting < aRunning {
		t.Errorf("b did not wait for a (a running at %d, b starting at %d)", aRunning, bStarting)
	}
}

func TestShutdownFiftyProgramsSomeIgnoringTERM(t *testing.T) {
	var b strings.Builder
	b.WriteString("[supervisor]\nshutdown_timeout = \"20s\"\n")
	for i := range 50 {
		cmd := `echo $$ >> pids; exec sleep 1000`
		if i%5 == 0 {
			cmd = `echo $$ >> pids; trap '' TERM; while :; do sleep 0.1; done`
		}
		fmt.Fprintf(&b, "[program.p%02d]\ncommand = [\"sh\", \"-c\", %q]\nstop_timeout = \"1s\"\n", i, cmd)
	}
	dir, file := writeConfig(t, b.String())
	d := startDaemon(t, dir, file)
	eventually(t, "50 running", 60*time.Second, func() bool {
		n := 0
		for _, s := range d.status() {
			if s.State == "Running" {
				n++
			}
		}
		return n == 50
	})
	var pids []int
	for _, l := range readLines(t, filepath.Join(dir, "pids")) {
		p, _ := strconv.Atoi(l)
		pids = append(pids, p)
	}
	start := time.Now()
	d.signal(syscall.SIGTERM)
	d.wait(30 * time.Second)
	took := time.Since(start)
	// stop_timeout is 1s; everything stops in parallel (one level).
	if took > 1*time.Second+5*time.Second {
		t.Errorf("shutdown took %v, want about stop_timeout (1s) plus a margin", took)
	}
	for _, p := range pids {
		if alive(p) {
			t.Errorf("pid %d survived the shutdown", p)
		}
	}
	t.Logf("shutdown of 50 programs (10 ignoring TERM, stop_timeout 1s) took %v", took.Round(time.Millisecond))
}

func TestLogsNoneLostNoneTorn(t *testing.T) {
	const writers, lines = 4, 50_000
	var b strings.Builder
	for i := range writers {
		fmt.Fprintf(&b, `
[program.w%d]
command = ["sh", "-c", "i=0; while [ $i -lt %d ]; do echo \"w%d $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"; i=$((i+1)); done"]
restart = "never"
stdout = { file = "w%d.log", max_size = "1MiB", max_files = 3 }
`, i, lines, i, i)
	}
	b.WriteString(`
[program.rot]
command = ["sh", "-c", "i=0; while [ $i -lt 60000 ]; do echo \"rot $i yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\"; i=$((i+1)); done"]
restart = "never"
stdout = { console = false, file = "rot.log", max_size = "256KiB", max_files = 3 }
`)
	dir, file := writeConfig(t, b.String())
	d := startDaemon(t, dir, file)
	if code := d.wait(5 * time.Minute); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	line := regexp.MustCompile(`^(w\d) +\| (w\d) (\d+) x{72}$`)
	seen := make([]map[int]bool, writers)
	for i := range seen {
		seen[i] = map[int]bool{}
	}
	for _, l := range strings.Split(d.stdout.String(), "\n") {
		if l == "" {
			continue
		}
		m := line.FindStringSubmatch(l)
		if m == nil || m[1] != m[2] {
			if strings.HasPrefix(l, "rot") {
				t.Fatalf("rot has console = false but reached the console: %q", l)
			}
			t.Fatalf("torn or foreign console line: %q", l)
		}
		w, _ := strconv.Atoi(m[1][1:])
		n, _ := strconv.Atoi(m[3])
		seen[w][n] = true
	}
	for w := range writers {
		if len(seen[w]) != lines {
			t.Errorf("console: w%d has %d of %d lines", w, len(seen[w]), lines)
		}
		// The file of each writer, across its rotations, has every line in order.
		var all []string
		files, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("w%d.log*", w)))
		sort.Slice(files, func(i, j int) bool { return rotIndex(files[i]) > rotIndex(files[j]) })
		for _, f := range files {
			all = append(all, readLines(t, f)...)
		}
		if len(files) > 3 {
			t.Errorf("w%d: %d files, max_files = 3", w, len(files))
		}
		// Rotation drops the oldest files; what is kept is a complete tail.
		if len(all) == 0 {
			t.Fatalf("w%d: no log file", w)
		}
		first, _ := strconv.Atoi(strings.Fields(all[0])[1])
		for k, l := range all {
			if want := fmt.Sprintf("w%d %d x", w, first+k); !strings.HasPrefix(l, want) {
				t.Fatalf("w%d file line %d: %q, want prefix %q", w, k, l, want)
			}
		}
		if last := first + len(all) - 1; last != lines-1 {
			t.Errorf("w%d: file ends at line %d, want %d", w, last, lines-1)
		}
	}
	rot, _ := filepath.Glob(filepath.Join(dir, "rot.log*"))
	if len(rot) != 3 {
		t.Errorf("rotation kept %d files (%v), want max_files = 3", len(rot), rot)
	}
}

func rotIndex(f string) int {
	ext := filepath.Ext(f)
	if n, err := strconv.Atoi(strings.TrimPrefix(ext, ".")); err == nil {
		return n
	}
	return 0
}

func TestBadConfigThreeErrorsNothingStarts(t *testing.T) {
	dir, file := writeConfig(t, `[program.a]
command = ["sh", "-c", "touch started"]
restart = "sometimes"

[program.b]
command = ["sh", "-c", "touch started"]
stop_timeout = "ten seconds"
depends_on = ["nosuch"]
`)
	d := startDaemon(t, dir, file)
	code := d.wait(30 * time.Second)
	if code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	errLine := regexp.MustCompile(`supervise\.toml:(\d+): (\S+): `)
	var found []string
	for _, l := range strings.Split(d.stderr.String(), "\n") {
		if m := errLine.FindStringSubmatch(l); m != nil {
			found = append(found, m[1]+" "+m[2])
		}
	}
	want := []string{"3 program.a.restart", "7 program.b.stop_timeout", "8 program.b.depends_on[0]"}
	sort.Strings(found)
	if strings.Join(found, "; ") != strings.Join(want, "; ") {
		t.Errorf("errors: %v, want %v\nstderr:\n%s", found, want, d.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
		t.Error("a program started despite the bad config")
	}
	// check says the same.
	out, _ := runCheck(t, file)
	if n := len(errLine.FindAllString(out, -1)); n != 3 {
		t.Errorf("supervise check printed %d errors, want 3:\n%s", n, out)
	}
}
