package export

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/schedule"
)

func TestSystemdTimer(t *testing.T) {
	cfg := parse(t, `
[program.report]
command = ["/bin/sh", "-c", "echo report"]
schedule = "30 6 * * MON-FRI"
timezone = "Europe/Berlin"
max_runtime = "10m"
jitter = "1m"
concurrency = "replace"

[program.tick]
command = ["/bin/true"]
schedule = "@every 90s"
starting_deadline = "5m"

[program.either]
command = ["/bin/true"]
schedule = "0 0 1,15 * FRI"
autostart = false

[program.pile]
command = ["/bin/true"]
schedule = "@hourly"
concurrency = "allow"
`)
	files, warns, err := Systemd(cfg, SystemdOptions{Prefix: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	verify(t, files)
	timer := unit(t, files, "demo-report.timer")
	for _, want := range []string{
		"OnCalendar=Mon..Fri *-*-* 06:30:00 Europe/Berlin\n",
		"AccuracySec=1s\n", "Persistent=true\n", "RandomizedDelaySec=60s\n", "PartOf=demo.target\n",
	} {
		if !strings.Contains(timer, want) {
			t.Errorf("report timer lacks %q:\n%s", want, timer)
		}
	}
	if svc := unit(t, files, "demo-report.service"); !strings.Contains(svc, "RuntimeMaxSec=600s\n") || !strings.Contains(svc, "Restart=on-failure\n") {
		t.Errorf("report service:\n%s", svc)
	}
	tick := unit(t, files, "demo-tick.timer")
	if !strings.Contains(tick, "OnActiveSec=90s\n") || !strings.Contains(tick, "OnUnitActiveSec=90s\n") || !strings.Contains(tick, "Persistent=false\n") {
		t.Errorf("tick timer:\n%s", tick)
	}
	// Both day fields: cron takes either, systemd both: two events.
	either := unit(t, files, "demo-either.timer")
	if !strings.Contains(either, "OnCalendar=*-*-01,15 00:00:00 UTC\n") || !strings.Contains(either, "OnCalendar=Fri *-*-* 00:00:00 UTC\n") {
		t.Errorf("either timer:\n%s", either)
	}
	target := unit(t, files, "demo.target")
	if !strings.Contains(target, "demo-report.timer") || !strings.Contains(target, "demo-tick.timer") ||
		strings.Contains(target, "demo-report.service") || strings.Contains(target, "demo-either") {
		t.Errorf("target:\n%s", target)
	}
	var keys []string
	for _, w := range warns {
		keys = append(keys, w.Program+" "+w.Key)
	}
	for _, want := range []string{"report concurrency", "tick schedule", "tick starting_deadline", "pile concurrency"} {
		if !slices.Contains(keys, want) {
			t.Errorf("no warning for %s in %v", want, keys)
		}
	}
}

// TestOnCalendarAgreesWithSystemd asks systemd-analyze calendar for the
// next times of each translated expression, from a fixed base, and
// compares them with the schedule's own.
func TestOnCalendarAgreesWithSystemd(t *testing.T) {
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is missing (Debian's systemd package)")
	}
	base := time.Date(2026, 5, 12, 10, 17, 23, 0, time.UTC)
	const n = 8
	cases := []struct{ expr, zone string }{
		{"*/5 * * * *", ""},
		{"0 * * * *", ""},
		{"@daily", ""},
		{"@weekly", ""},
		{"@monthly", ""},
		{"@yearly", ""},
		{"30 6 * * MON-FRI", "Europe/Berlin"},
		{"15,45 9-17 * * 1-5", "America/New_York"},
		{"0 0 1,15 * FRI", ""},
		{"0 12 13 * 5", "Asia/Tokyo"},
		{"0 0 29 2 *", ""},
		{"0 0 31 * *", ""},
		{"10-20/5 4 * JAN,JUL *", ""},
		{"0 */6 * * *", "Australia/Sydney"},
		{"*/20 */2 * * * *", ""},
		{"5/15 8 * * SAT,SUN", ""},
		{"0 22 * * 0", "America/Los_Angeles"},
		{"45 23 28-31 * *", ""},
		{"0 9 */10 * *", ""},
		{"0 5 1 */3 *", "Europe/London"},
	}
	for _, c := range cases {
		loc := time.UTC
		if c.zone != "" {
			if loc, err = time.LoadLocation(c.zone); err != nil {
				t.Fatal(err)
			}
		}
		spec, err := schedule.Parse(c.expr, loc)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		var want []string
		for at := base; len(want) < n; {
			at = spec.Next(at)
			want = append(want, at.UTC().Format("2006-01-02 15:04:05"))
		}
		var got []string
		events := OnCalendar(spec, c.zone)
		for _, ev := range events {
			cmd := exec.Command(bin, "calendar", fmt.Sprintf("--base-time=@%d", base.Unix()), fmt.Sprintf("--iterations=%d", n), ev)
			cmd.Env = append(os.Environ(), "TZ=UTC")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%q → %q: systemd-analyze calendar: %v\n%s", c.expr, ev, err, out)
			}
			got = append(got, elapses(string(out))...)
		}
		slices.Sort(got)
		got = slices.Compact(got)
		if len(got) > n {
			got = got[:n]
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q in %q → %q:\nsystemd: %v\n    ours: %v", c.expr, c.zone, events, got, want)
		}
	}
}

// elapses are the times systemd-analyze calendar prints (TZ=UTC): "Next
// elapse: Tue 2026-12-01 02:00:00 UTC", "Iter. #2: …".
func elapses(out string) []string {
	var ts []string
	for _, line := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(line, "Next elapse: ")
		if !ok {
			_, rest, ok = strings.Cut(line, "Iter. #")
			if ok {
				_, rest, ok = strings.Cut(rest, ": ")
			}
		}
		if f := strings.Fields(rest); ok && len(f) == 4 {
			ts = append(ts, f[1]+" "+f[2])
		}
	}
	return ts
}
