package integration

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// concurrency = "allow": a 3 s job due every second runs beside itself.
// Each run marks its start and end in a file (small O_APPEND writes, whole
// lines) and prints a line with its own token; the runs overlap, status
// shows each as an instance of its own, every run's line is in the job's
// log (the ones of runs already gone too), and `supervisectl stop` ends
// them all.
func TestScheduleAllowOverlaps(t *testing.T) {
	dir, file := writeConfig(t, `
[program.slow]
command = ["sh", "-c", "t=$(date +%s%N); echo start $t >> marks; echo hello from $t; sleep 3; echo done $t; echo end $t >> marks"]
schedule = "@every 1s"
concurrency = "allow"
`)
	d := startDaemon(t, dir, file)
	marks := filepath.Join(dir, "marks")

	// Status shows the runs beside the first, each with its own process.
	var running map[string]programStatus
	eventually(t, "two runs at once in status", 60*time.Second, func() bool {
		running = map[string]programStatus{}
		for name, st := range d.status() {
			if st.State == "Running" && st.Pid != 0 {
				running[name] = st
			}
		}
		_, first := running["slow"]
		return first && len(running) >= 2
	})
	pids := map[int]bool{}
	for name, st := range running {
		if name != "slow" && !strings.HasPrefix(name, "slow#") {
			t.Fatalf("status names a run %q", name)
		}
		pids[st.Pid] = true
	}
	if len(pids) != len(running) {
		t.Fatalf("runs share a process: %+v", running)
	}

	// The marks overlap: a run starts while another has not ended.
	eventually(t, "three runs ended", 60*time.Second, func() bool {
		return strings.Count(strings.Join(readLines(t, marks), "\n"), "end ") >= 3
	})
	open, most := map[string]bool{}, 0
	var ended []string
	for _, l := range readLines(t, marks) {
		kind, tok, _ := strings.Cut(l, " ")
		if kind == "start" {
			open[tok] = true
		} else {
			delete(open, tok)
			ended = append(ended, tok)
		}
		most = max(most, len(open))
	}
	if most < 2 {
		t.Fatalf("no two runs overlapped:\n%s", strings.Join(readLines(t, marks), "\n"))
	}

	// Every run that ended has its lines in the job's log, tagged with
	// the instance that ran it, though the runs beside the first are gone.
	// A line is read from the run's pipe while the run goes on to write
	// its end mark: it may reach the log a moment after.
	var by map[string]string // token → the instance that printed its lines
	var out string
	logged := func() bool {
		var code int
		out, code = d.ctl("logs", "--json", "-n", "10000", "slow")
		if code != 0 {
			t.Fatalf("logs: %s", out)
		}
		by = map[string]string{}
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			var l struct{ Program, Text string }
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("logs --json: %v: %s", err, sc.Text())
			}
			if tok, ok := strings.CutPrefix(l.Text, "done "); ok {
				by[tok] = l.Program
			}
		}
		for _, tok := range ended {
			if _, ok := by[tok]; !ok {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(30 * time.Second)
	for !logged() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	tags := map[string]bool{}
	for _, tok := range ended {
		p, ok := by[tok]
		if !ok {
			t.Errorf("the run %s ended but its lines are not in the log:\n%s", tok, out)
		}
		tags[p] = true
	}
	if len(tags) < 2 {
		t.Errorf("the log names %d instance(s) for %d runs: %v", len(tags), len(ended), tags)
	}

	// stop ends every run, and the runs beside the first go.
	before := d.status()
	d.ctlOK("stop", "slow")
	for name, st := range before {
		if st.Pid != 0 && alive(st.Pid) {
			t.Errorf("%s (pid %d) still runs after stop", name, st.Pid)
		}
	}
	after := d.status()
	if len(after) != 1 || after["slow"].State != "Stopped" {
		t.Fatalf("status after stop: %+v", after)
	}
}
