package integration

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jobStatus is what status --json says of a scheduled program.
type jobStatus struct {
	Name     string     `json:"name"`
	State    string     `json:"state"`
	Schedule string     `json:"schedule"`
	NextRun  *time.Time `json:"next_run"`
	LastRun  *struct {
		StartedAt time.Time `json:"started_at"`
		Result    string    `json:"result"`
	} `json:"last_run"`
}

func (d *daemon) jobStatus(name string) jobStatus {
	d.t.Helper()
	out, code := d.ctl("status", "--json", name)
	if code != 0 {
		d.t.Fatalf("status %s: %s", name, out)
	}
	var list []jobStatus
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 {
		d.t.Fatalf("status --json %s: %v\n%s", name, err, out)
	}
	return list[0]
}

// An "@every 2s" job, watched for 7 seconds from its first run (by the
// times the runs write), runs 4 times: at 0, 2, 4 and 6 s. Its times are on
// a fixed cadence, so a run that starts late delays none after it; on this
// loaded machine a late first run lets a fifth time into the window, and
// late later runs leave it: 2 to 5 are accepted, 4 is what an idle
// machine gives.
func TestScheduleEveryTwoSeconds(t *testing.T) {
	dir, file := writeConfig(t, `
[program.tick]
command = ["sh", "-c", "date +%s.%N >> runs"]
schedule = "@every 2s"
`)
	d := startDaemon(t, dir, file)
	runs := filepath.Join(dir, "runs")
	eventually(t, "the control socket", 30*time.Second, func() bool { _, code := d.ctl("status"); return code == 0 })
	st := d.jobStatus("tick")
	if st.Schedule != "@every 2s" || st.NextRun == nil || time.Until(*st.NextRun) > 3*time.Second {
		t.Fatalf("status before the first run: %+v", st)
	}
	out, _ := d.ctl("status")
	if !strings.Contains(out, "next run in") {
		t.Errorf("status table does not show the next run:\n%s", out)
	}

	stamps := func() []float64 {
		var ts []float64
		for _, l := range readLines(t, runs) {
			f, err := strconv.ParseFloat(l, 64)
			if err != nil {
				t.Fatalf("runs: %q", l)
			}
			ts = append(ts, f)
		}
		return ts
	}
	eventually(t, "the first run", 30*time.Second, func() bool { return len(stamps()) > 0 })
	first := stamps()[0]
	// The window itself: wait until its end has passed, and a little for
	// a run begun inside it to write.
	time.Sleep(time.Until(time.Unix(0, int64((first+7.5)*1e9))))
	n := 0
	for _, ts := range stamps() {
		if ts < first+7 {
			n++
		}
	}
	t.Logf("%d runs in the 7 s from the first", n)
	if n < 2 || n > 5 {
		t.Fatalf("%d runs in 7s, want 4 (2 to 5 on a loaded machine): %v", n, stamps())
	}
	eventually(t, "a run's result", 30*time.Second, func() bool {
		st := d.jobStatus("tick")
		return st.LastRun != nil && st.LastRun.Result == "succeeded"
	})
	var scheduled int
	for _, ev := range d.events() {
		if ev.Program == "tick" && strings.HasPrefix(ev.Message, "schedule: run of ") {
			scheduled++
		}
	}
	if scheduled < n {
		t.Errorf("%d runs but %d events of them", n, scheduled)
	}
}

// concurrency = "forbid": a 3 s job due every second never runs twice at
// once. The job appends start and end marks (small O_APPEND writes, whole
// lines); the marks must alternate.
func TestScheduleForbidNeverOverlaps(t *testing.T) {
	dir, file := writeConfig(t, `
[program.slow]
command = ["sh", "-c", "echo start $(date +%s%N) >> marks; sleep 3; echo end $(date +%s%N) >> marks"]
schedule = "@every 1s"
concurrency = "forbid"
`)
	d := startDaemon(t, dir, file)
	marks := filepath.Join(dir, "marks")
	eventually(t, "three runs", 60*time.Second, func() bool {
		return strings.Count(strings.Join(readLines(t, marks), "\n"), "end ") >= 3
	})
	lines := readLines(t, marks)
	var last int64
	for i, l := range lines {
		kind, stamp, ok := strings.Cut(l, " ")
		ns, err := strconv.ParseInt(stamp, 10, 64)
		if !ok || err != nil {
			t.Fatalf("line %d: %q", i+1, l)
		}
		want := "start"
		if i%2 == 1 {
			want = "end"
		}
		if kind != want {
			t.Fatalf("line %d is %q, want a %s: two runs overlapped\n%s", i+1, l, want, strings.Join(lines, "\n"))
		}
		if ns < last {
			t.Fatalf("line %d goes back in time\n%s", i+1, strings.Join(lines, "\n"))
		}
		last = ns
	}
	skipped := false
	for _, ev := range d.events() {
		skipped = skipped || ev.Program == "slow" && strings.Contains(ev.Message, "skipped: the last run still runs")
	}
	if !skipped {
		t.Error("no event says a time was skipped")
	}
}

// supervisectl start runs a job now, whatever its schedule.
func TestScheduleStartRunsNow(t *testing.T) {
	dir, file := writeConfig(t, `
[program.yearly]
command = ["sh", "-c", "echo ran >> runs"]
schedule = "@yearly"
timezone = "Pacific/Kiritimati"
`)
	d := startDaemon(t, dir, file)
	eventually(t, "the control socket", 30*time.Second, func() bool { _, code := d.ctl("status"); return code == 0 })
	if st := d.jobStatus("yearly"); st.State != "Stopped" || st.NextRun == nil || st.NextRun.Month() != time.January {
		t.Fatalf("before start: %+v", st)
	}
	d.ctlOK("start", "yearly")
	eventually(t, "the run", 30*time.Second, func() bool { return len(readLines(t, filepath.Join(dir, "runs"))) == 1 })
	eventually(t, "Completed", 30*time.Second, func() bool { return d.jobStatus("yearly").State == "Completed" })
}
