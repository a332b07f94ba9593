package integration

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// whyRecord is `supervisectl why --json`, as the tests read it.
type whyRecord struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	Restarts  int    `json:"restarts"`
	BackoffMs int64  `json:"backoff_ms"`
	LastRun   *struct {
		StartedAt       *time.Time `json:"started_at"`
		EndedAt         time.Time  `json:"ended_at"`
		DurationMs      int64      `json:"duration_ms"`
		Status          int        `json:"status"`
		Code            int        `json:"code"`
		Signal          string     `json:"signal"`
		Reason          string     `json:"reason"`
		PeakMemoryBytes int64      `json:"peak_memory_bytes"`
		Stdout          []string   `json:"stdout"`
		Stderr          []string   `json:"stderr"`
		Truncated       bool       `json:"truncated"`
	} `json:"last_run"`
}

func (d *daemon) why(name string) whyRecord {
	d.t.Helper()
	out, code := d.ctl("why", "--json", name)
	if code != 0 {
		d.t.Fatalf("why --json %s: exit %d\n%s", name, code, out)
	}
	var ws []whyRecord
	if err := json.Unmarshal([]byte(out), &ws); err != nil || len(ws) != 1 {
		d.t.Fatalf("why --json %s: %v\n%s", name, err, out)
	}
	return ws[0]
}

// After a crash and a restart, why shows the dead run: its exit code and
// its own last lines, not the lines the next run has written since. After
// a SIGKILL, 137 and the signal's name.
func TestWhyCrashShowsTheDeadRun(t *testing.T) {
	needRoot(t)
	count := filepath.Join(t.TempDir(), "runs")
	dir, file := writeConfig(t, fmt.Sprintf(`
[program.web]
command = ["sh", "-c", "n=$(cat %[1]s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s; for i in 1 2 3; do echo \"run $n out $i\"; done; echo \"run $n err\" >&2; if [ $n -ge 2 ]; then exec sleep 100000; fi; exit 3"]
exit_tail_lines = 2
`, count))
	d := startDaemon(t, dir, file)

	eventually(t, "the second run's lines in the log", 60*time.Second, func() bool {
		out, _ := d.ctl("logs", "web")
		return strings.Contains(out, "run 2 err") && d.status()["web"].State == "Running"
	})
	w := d.why("web")
	r := w.LastRun
	if r == nil {
		t.Fatalf("why web: no last run: %+v", w)
	}
	if r.Code != 3 || r.Status != 3 || r.Signal != "" || r.Reason != "Error" {
		t.Errorf("why web: code %d status %d signal %q reason %q, want 3, 3, none, Error", r.Code, r.Status, r.Signal, r.Reason)
	}
	if want := []string{"run 1 out 2", "run 1 out 3"}; !slices.Equal(r.Stdout, want) {
		t.Errorf("why web: stdout %q, want the dead run's last 2 lines %q", r.Stdout, want)
	}
	if want := []string{"run 1 err"}; !slices.Equal(r.Stderr, want) {
		t.Errorf("why web: stderr %q, want %q", r.Stderr, want)
	}
	if r.StartedAt == nil || r.EndedAt.Before(*r.StartedAt) {
		t.Errorf("why web: started %v ended %v", r.StartedAt, r.EndedAt)
	}
	if w.Restarts != 1 || w.State != "Running" {
		t.Errorf("why web: restarts %d state %s, want 1 Running", w.Restarts, w.State)
	}
	text, code := d.ctl("why", "web")
	if code != 0 || !strings.Contains(text, "exit 3, Error") || !strings.Contains(text, "| run 1 out 3") || strings.Contains(text, "run 2") {
		t.Errorf("why web (text): exit %d\n%s", code, text)
	}

	// The second run dies of SIGKILL: 128+9, KILL, its own lines.
	pid := d.status()["web"].Pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "why web to show the killed run", 60*time.Second, func() bool {
		r := d.why("web").LastRun
		return r != nil && r.Signal != ""
	})
	r = d.why("web").LastRun
	if r.Status != 137 || r.Signal != "KILL" || r.Reason != "Signaled" {
		t.Errorf("after SIGKILL: status %d signal %q reason %q, want 137 KILL Signaled", r.Status, r.Signal, r.Reason)
	}
	if want := []string{"run 2 out 2", "run 2 out 3"}; !slices.Equal(r.Stdout, want) {
		t.Errorf("after SIGKILL: stdout %q, want %q", r.Stdout, want)
	}

	// events: one record per ended run.
	evs, _ := d.ctl("events", "--json")
	if n := strings.Count(evs, `"run":{`); n != 2 {
		t.Errorf("events: %d run records, want 2\n%s", n, evs)
	}
}

// A run the kernel's OOM killer ended: why says OOMKilled, and the peak
// memory of its cgroup reached the limit.
func TestWhyOOMKilledShowsPeak(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, `
[program.hog]
command = ["sh", "-c", "echo allocating; head -c 400000000 /dev/zero | tail > /dev/null"]
restart = "never"
sandbox = { memory_max = "32MiB" }
[program.keep] # keeps supervise up once hog has ended
command = ["sleep", "100000"]
`)
	d := startDaemon(t, dir, file)
	eventually(t, "hog to end", 120*time.Second, func() bool {
		st := d.status()["hog"].State
		return st == "Failed" || st == "Completed"
	})
	w := d.why("hog")
	r := w.LastRun
	if r == nil || r.Reason != "OOMKilled" {
		t.Fatalf("why hog: %+v, want OOMKilled", r)
	}
	if r.PeakMemoryBytes < 16<<20 || r.PeakMemoryBytes > 64<<20 {
		t.Errorf("why hog: peak %d bytes, want near the 32 MiB limit", r.PeakMemoryBytes)
	}
	if !slices.Contains(r.Stdout, "allocating") {
		t.Errorf("why hog: stdout %q", r.Stdout)
	}
	text, _ := d.ctl("why", "hog")
	if !strings.Contains(text, "OOMKilled") || !strings.Contains(text, "peak ") {
		t.Errorf("why hog (text):\n%s", text)
	}
}

// A program printing 10 MB lines: the record keeps a bounded tail (each
// line cut, each stream bounded), and the supervisor lives on.
func TestWhyTailBounded(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, `
[program.big]
command = ["sh", "-c", "for i in 1 2 3; do head -c 10000000 /dev/zero | tr '\\0' x; echo; done; echo tail-end; exit 1"]
restart = "never"
stdout = { console = false }
[program.keep]
command = ["sleep", "100000"]
`)
	d := startDaemon(t, dir, file)
	eventually(t, "big to end", 120*time.Second, func() bool { return d.status()["big"].State == "Failed" })
	out, code := d.ctl("why", "--json", "big")
	if code != 0 {
		t.Fatalf("why: %d %s", code, out)
	}
	if len(out) > 100<<10 {
		t.Errorf("why --json big is %d bytes, want it bounded well under 100 KiB", len(out))
	}
	r := d.why("big").LastRun
	if r == nil || !r.Truncated || len(r.Stdout) == 0 || r.Stdout[len(r.Stdout)-1] != "tail-end" {
		t.Fatalf("why big: %+v", r)
	}
	for _, l := range r.Stdout {
		if len(l) > 4<<10 {
			t.Errorf("a kept line of %d bytes", len(l))
		}
	}
}

// supervisectl top shows the why line of the selected program, and j
// moves the selection.
func TestTopShowsWhyLine(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, `
[program.alpha]
command = ["sh", "-c", "echo bye; exit 3"]
restart = "never"
[program.beta]
command = ["sleep", "100000"]
`)
	d := startDaemon(t, dir, file)
	eventually(t, "alpha failed, beta running", 60*time.Second, func() bool {
		st := d.status()
		return st["alpha"].State == "Failed" && st["beta"].State == "Running"
	})
	top := startTop(t, d, 120)
	eventually(t, "alpha's why line", 60*time.Second, func() bool { return top.seen("why alpha: exit 3, Error") })
	top.master.Write([]byte("n")) // by name: alpha, beta
	eventually(t, "sorted by name", 60*time.Second, func() bool { return top.seen("sorted by name") })
	top.master.Write([]byte("j"))
	eventually(t, "beta's why line after j", 60*time.Second, func() bool { return top.seen("why beta: never ended") })
	top.master.Write([]byte("q"))
	select {
	case <-top.done:
	case <-time.After(60 * time.Second):
		t.Fatal("top did not quit on q")
	}
}
