package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stderr = "stdout": a program's descriptor 2 is its stdout pipe, so its
// lines reach one destination in the order written, and supervise holds
// one descriptor for the program's output, not two.

// alternating writes n pairs of lines, "out I" on stdout then "err I" on
// stderr, and sleeps.
func alternating(n int) string {
	return fmt.Sprintf(`["sh", "-c", "i=1; while [ $i -le %d ]; do echo \"out $i\"; echo \"err $i\" >&2; i=$((i+1)); done; exec sleep infinity"]`, n)
}

// checkAlternating checks that lines are "out 1", "err 1", "out 2" … up
// to pair n at least, with nothing out of order and nothing missing, and
// returns the pairs there.
func checkAlternating(t *testing.T, what string, lines []string, n int) int {
	t.Helper()
	for i, l := range lines {
		want := fmt.Sprintf("out %d", i/2+1)
		if i%2 == 1 {
			want = fmt.Sprintf("err %d", i/2+1)
		}
		if l != want {
			t.Fatalf("%s: line %d is %q, want %q (streams out of order, or a line lost)", what, i+1, l, want)
		}
	}
	if len(lines) < 2*n {
		t.Fatalf("%s: %d lines, want %d", what, len(lines), 2*n)
	}
	return len(lines) / 2
}

// pipeInode is the pipe at descriptor fd of pid ("" when it is not a pipe).
func pipeInode(t *testing.T, pid, fd int) string {
	t.Helper()
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link, "pipe:") {
		return ""
	}
	return link
}

// pipesHeld counts supervise's descriptors on each pipe.
func pipesHeld(t *testing.T, pid int) map[string]int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]int{}
	for _, e := range ents {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if err == nil && strings.HasPrefix(link, "pipe:") {
			held[link]++
		}
	}
	return held
}

// outputPipes are the pipes at a program's descriptors 1 and 2, and how
// many descriptors supervise holds on them.
func outputPipes(t *testing.T, sup, pid int) (out, err string, held int) {
	t.Helper()
	out, err = pipeInode(t, pid, 1), pipeInode(t, pid, 2)
	if out == "" || err == "" {
		t.Fatalf("pid %d: stdout %q, stderr %q: want pipes", pid, out, err)
	}
	h := pipesHeld(t, sup)
	held = h[out]
	if err != out {
		held += h[err]
	}
	return out, err, held
}

func TestStderrToStdout(t *testing.T) {
	needRoot(t)
	const pairs = 200
	dir := t.TempDir()
	log := filepath.Join(dir, "merged.log")
	_, file := writeConfig(t, fmt.Sprintf(`
[defaults]
stderr = "stdout"

[program.merged]
command = %s
stdout = { file = %q }

[program.console]
command = ["sh", "-c", "echo 'said on stderr' >&2; exec sleep infinity"]
ready_log_line = "said on stderr"

[program.apart]
command = ["sleep", "infinity"]
stderr = { console = true }
`, alternating(pairs), log))
	d := startDaemon(t, dir, file)
	pids := d.running("merged", "console", "apart")
	sup := d.cmd.Process.Pid

	// One file holds both streams, in the order the program wrote them.
	eventually(t, "every line in the file", 60*time.Second, func() bool { return len(readLines(t, log)) >= 2*pairs })
	checkAlternating(t, log, readLines(t, log), pairs)

	// One pipe at descriptors 1 and 2, and one descriptor of supervise's
	// on it; the program that keeps its stderr apart has two of each.
	for _, name := range []string{"merged", "console"} {
		out, errp, held := outputPipes(t, sup, pids[name])
		if out != errp || held != 1 {
			t.Errorf("%s: stdout %s, stderr %s, supervise holds %d descriptors on them; want one pipe and one descriptor", name, out, errp, held)
		}
	}
	if out, errp, held := outputPipes(t, sup, pids["apart"]); out == errp || held != 2 {
		t.Errorf("apart: stdout %s, stderr %s, supervise holds %d descriptors on them; want two pipes and two descriptors", out, errp, held)
	}

	// A stderr line still reaches the console and the ring, as stdout's.
	eventually(t, "the stderr line on the console", 30*time.Second, func() bool {
		return strings.Contains(d.stdout.String(), "console | said on stderr")
	})
	if out, _ := d.ctl("logs", "console"); !strings.Contains(out, "said on stderr") {
		t.Errorf("supervisectl logs console does not show the stderr line:\n%s", out)
	}
	if out, _ := d.ctl("logs", "--json", "console"); !strings.Contains(out, `"stream":"stdout"`) {
		t.Errorf("a merged line is not logged as stdout:\n%s", out)
	}
	// ready_log_line sees it too.
	eventually(t, "console ready on its stderr line", 30*time.Second, func() bool {
		out, _ := d.ctl("status", "--json", "console")
		var st []struct {
			Ready bool `json:"ready"`
		}
		return json.Unmarshal([]byte(out), &st) == nil && len(st) == 1 && st[0].Ready
	})
}

// Each program whose streams are merged costs supervise one descriptor:
// starting N of them adds N pipe descriptors, where N with their streams
// apart add 2N.
func TestStderrToStdoutOneDescriptorPerProgram(t *testing.T) {
	needRoot(t)
	const n = 20
	var cfg strings.Builder
	for i := range n {
		fmt.Fprintf(&cfg, "[program.m%d]\ncommand = [\"sleep\", \"infinity\"]\nautostart = false\nstderr = \"stdout\"\n\n", i)
		fmt.Fprintf(&cfg, "[program.s%d]\ncommand = [\"sleep\", \"infinity\"]\nautostart = false\n\n", i)
	}
	dir, file := writeConfig(t, cfg.String())
	d := startDaemon(t, dir, file)
	sup := d.cmd.Process.Pid
	count := func() int {
		total := 0
		for _, c := range pipesHeld(t, sup) {
			total += c
		}
		return total
	}
	startAll := func(prefix string) {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("%s%d", prefix, i)
		}
		d.ctlOK(append([]string{"start"}, names...)...)
		d.running(names...)
	}
	eventually(t, "supervise's control socket", 30*time.Second, func() bool { return d.status() != nil })
	before := count()
	startAll("m")
	merged := count()
	startAll("s")
	apart := count()
	if merged-before != n {
		t.Errorf("%d programs with stderr = \"stdout\" added %d pipe descriptors to supervise, want %d", n, merged-before, n)
	}
	if apart-merged != 2*n {
		t.Errorf("%d programs with their streams apart added %d pipe descriptors, want %d", n, apart-merged, 2*n)
	}
}

// An upgrade in place hands the one pipe over: the program keeps its
// pid, and its lines go on into the one file in order, with no gap.
func TestUpgradeKeepsStderrToStdout(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "merged.log")
	fifo := filepath.Join(dir, "pause")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// out I and err I, each in two writes (an upgrade may fall between
	// the halves of a line), pausing on a read that times out.
	prog := fmt.Sprintf(`["bash", "-c", "exec 3<>%s; i=0; while :; do i=$((i+1)); printf 'out '; printf '%%d\\n' $i; printf 'err ' >&2; printf '%%d\\n' $i >&2; read -t 0.05 -u 3; done"]`, fifo)
	d, _ := upgradeDaemon(t, fmt.Sprintf("[program.merged]\ncommand = %s\nstdout = { file = %q }\nstderr = \"stdout\"\n", prog, log))
	pid := d.running("merged")["merged"]
	eventually(t, "lines in the file", 60*time.Second, func() bool { return len(readLines(t, log)) >= 10 })
	for u := 1; u <= 3; u++ {
		d.upgrade(fmt.Sprintf("upgrade %d", u))
		if got := d.pids()["merged"]; got != pid {
			t.Fatalf("upgrade %d: pid %d, was %d", u, got, pid)
		}
		sup := d.version().Pid
		if out, errp, held := outputPipes(t, sup, pid); out != errp || held != 1 {
			t.Fatalf("upgrade %d: stdout %s, stderr %s, supervise holds %d descriptors on them; want one pipe and one descriptor", u, out, errp, held)
		}
	}
	at := len(readLines(t, log))
	eventually(t, "lines after the upgrades", 60*time.Second, func() bool { return len(readLines(t, log)) >= at+10 })
	d.shutdown(60 * time.Second)
	lines := readLines(t, log)
	if n := len(lines); n > 0 && !isWhole(lines[n-1]) {
		lines = lines[:n-1] // killed between the two writes of its last line
	}
	checkAlternating(t, log, lines, 10)
}

// isWhole reports whether l is a whole "out I" or "err I" line.
func isWhole(l string) bool {
	var s string
	var i int
	n, _ := fmt.Sscanf(l, "%s %d", &s, &i)
	return n == 2
}

// Turning stderr = "stdout" on in a reload gives the program a new
// process with one pipe; turning it off, one with two again.
func TestReloadStderrToStdout(t *testing.T) {
	needRoot(t)
	const apart = "[program.p]\ncommand = [\"sleep\", \"infinity\"]\n"
	dir, file := writeConfig(t, apart)
	d := startDaemon(t, dir, file)
	sup := d.cmd.Process.Pid
	pid := d.running("p")["p"]
	if out, errp, held := outputPipes(t, sup, pid); out == errp || held != 2 {
		t.Fatalf("before: stdout %s, stderr %s, %d descriptors held; want two pipes", out, errp, held)
	}
	for i, c := range []struct {
		src    string
		merged bool
	}{{apart + "stderr = \"stdout\"\n", true}, {apart, false}} {
		if err := os.WriteFile(file, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, code := d.ctl("reload"); code != 0 {
			t.Fatalf("reload %d: %s", i+1, out)
		}
		var next int
		eventually(t, "a new process", 60*time.Second, func() bool {
			st := d.status()["p"]
			next = st.Pid
			return st.State == "Running" && next != 0 && next != pid
		})
		pid = next
		out, errp, held := outputPipes(t, sup, pid)
		if c.merged && (out != errp || held != 1) || !c.merged && (out == errp || held != 2) {
			t.Errorf("reload %d (merged %v): stdout %s, stderr %s, %d descriptors held", i+1, c.merged, out, errp, held)
		}
	}
}
