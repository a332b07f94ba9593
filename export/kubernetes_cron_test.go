package export

import (
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/schedule"
)

func TestCronJobSchedule(t *testing.T) {
	for _, c := range []struct {
		expr, want string
		warn       string // a word of the warning; "" for none
	}{
		{"*/5 * * * *", "*/5 * * * *", ""},
		{"0 9-17 * * MON-FRI", "0 9-17 * * 1-5", ""},
		{"0 0 * * 7", "0 0 * * 0", ""},
		{"@daily", "0 0 * * *", ""},
		{"@weekly", "0 0 * * 0", ""},
		{"0 0 1,15 * FRI", "0 0 1,15 * 5", ""},
		{"0 0 1-31 * FRI", "0 0 1-31 * 5", ""}, // restricted to every day: still OR
		{"0 0 */2 * FRI", "0 0 */2 * 5", "both fields match"},
		{"30 */10 * * * *", "*/10 * * * *", "once a minute"},
		{"0 30 6 * * *", "30 6 * * *", ""},
		{"@every 15m", "*/15 * * * *", ""},
		{"@every 1m", "* * * * *", ""},
		{"@every 2h", "0 */2 * * *", ""},
		{"@every 24h", "0 0 * * *", ""},
		{"@every 30s", "* * * * *", "once a minute"},
		{"@every 7m", "@every 7m0s", "repeats no cron expression"},
		{"5,10,15,20 * * * *", "5,10,15,20 * * * *", ""}, // not from the first value: listed
	} {
		spec, err := schedule.Parse(c.expr, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		got, warns := CronJobSchedule(spec)
		if got != c.want {
			t.Errorf("%q → %q, want %q", c.expr, got, c.want)
		}
		joined := strings.Join(warns, "; ")
		if c.warn == "" && joined != "" || c.warn != "" && !strings.Contains(joined, c.warn) {
			t.Errorf("%q: warnings %q, want one with %q", c.expr, joined, c.warn)
		}
	}
}

func TestKubernetesCronJob(t *testing.T) {
	cfg := parse(t, `
[program.report]
command = ["report"]
schedule = "30 6 * * MON-FRI"
timezone = "Europe/Berlin"
concurrency = "replace"
starting_deadline = "2m"
max_runtime = "10m"
restart = "never"
`)
	out, _, err := Kubernetes(cfg, KubernetesOptions{Image: "app:1", Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`kind: "CronJob"`, `schedule: "30 6 * * 1-5"`, `timeZone: "Europe/Berlin"`, `concurrencyPolicy: "Replace"`,
		"startingDeadlineSeconds: 120", "activeDeadlineSeconds: 600", "backoffLimit: 0", `restartPolicy: "Never"`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// concurrency = "allow" is the CronJob's Allow: a Job per time, however
// many still run.
func TestKubernetesCronJobAllow(t *testing.T) {
	cfg := parse(t, `
[program.pile]
command = ["pile"]
schedule = "@every 1m"
concurrency = "allow"
`)
	out, ws, err := Kubernetes(cfg, KubernetesOptions{Image: "app:1", Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `concurrencyPolicy: "Allow"`) {
		t.Errorf("no Allow in\n%s", out)
	}
	for _, w := range ws {
		if w.Key == "concurrency" {
			t.Errorf("a warning for what maps: %+v", w)
		}
	}
}

// --mode pod with jobs only: the CronJobs, and no Pod without a container.
func TestKubernetesPodModeJobsOnly(t *testing.T) {
	cfg := parse(t, `
[program.report]
command = ["report"]
schedule = "30 6 * * *"
`)
	out, _, err := Kubernetes(cfg, KubernetesOptions{Image: "app:1", Name: "demo", Pod: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, `kind: "CronJob"`) || strings.Contains(s, `kind: "Pod"`) {
		t.Fatalf("want the CronJob alone:\n%s", s)
	}
}
