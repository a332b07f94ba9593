package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestScheduleKeys(t *testing.T) {
	cfg := mustParse(t, `
[program.report]
command = "report"
schedule = "0 3 * * MON-FRI"
timezone = "America/New_York"
concurrency = "replace"
starting_deadline = "5m"
max_runtime = "1h"
jitter = "30s"

[program.tick]
command = "tick"
schedule = "@every 10s"
restart = "never"

[program.pile]
command = "pile"
schedule = "@every 1s"
concurrency = "allow"

[program.web]
command = "server"
`)
	r := cfg.Program("report")
	s := r.Schedule
	if !r.Scheduled() || s.Expr != "0 3 * * MON-FRI" || s.Timezone != "America/New_York" || s.Location.String() != "America/New_York" ||
		s.Concurrency != ConcurrencyReplace || s.StartingDeadline != 5*time.Minute || s.MaxRuntime != time.Hour || s.Jitter != 30*time.Second {
		t.Errorf("report schedule = %+v", s)
	}
	// The default restart of a job retries a failed run only.
	if r.Restart != RestartOnFailure {
		t.Errorf("report restart = %q, want on-failure", r.Restart)
	}
	next := s.Spec.Next(time.Date(2026, 7, 3, 12, 0, 0, 0, time.UTC)) // a Friday
	if want := time.Date(2026, 7, 6, 7, 0, 0, 0, time.UTC); !next.Equal(want) {
		t.Errorf("next run = %v, want %v (03:00 EDT on Monday)", next, want)
	}
	tick := cfg.Program("tick")
	if tick.Schedule.Location != time.UTC || tick.Schedule.Concurrency != ConcurrencyForbid || tick.Restart != RestartNever || tick.Schedule.Spec.Every() != 10*time.Second {
		t.Errorf("tick = %+v restart %q", tick.Schedule, tick.Restart)
	}
	if pile := cfg.Program("pile"); pile.Schedule.Concurrency != ConcurrencyAllow {
		t.Errorf("pile = %+v", pile.Schedule)
	}
	if web := cfg.Program("web"); web.Scheduled() || web.Restart != RestartAlways {
		t.Errorf("web is scheduled or lost its restart: %+v", web)
	}
}

// [defaults] may carry schedule keys (a timezone for every job) without
// making the daemons wrong, and its restart = "always" gives way.
func TestScheduleFromDefaults(t *testing.T) {
	cfg := mustParse(t, `
[defaults]
timezone = "Europe/Berlin"
restart = "always"

[program.job]
command = "job"
schedule = "@daily"

[program.web]
command = "server"
`)
	if job := cfg.Program("job"); job.Schedule.Location.String() != "Europe/Berlin" || job.Restart != RestartOnFailure {
		t.Errorf("job = %+v restart %q", job.Schedule, job.Restart)
	}
	if web := cfg.Program("web"); web.Scheduled() || web.Schedule != (Schedule{}) || web.Restart != RestartAlways {
		t.Errorf("web = %+v restart %q", web.Schedule, web.Restart)
	}
}

func TestScheduleErrors(t *testing.T) {
	got := problems(t, `
[supervisor]
exit_on = ["job"]

[program.job]
command = "job"
schedule = "@daily"
instances = 2
restart = "always"
critical = true

[program.bad]
command = "bad"
schedule = "61 * * * *"
timezone = "Mars/Olympus_Mons"

[program.worse]
command = "worse"
schedule = "* * *"
concurrency = "sometimes"
max_runtime = "0s"

[program.never]
command = "never"
schedule = "0 0 30 2 *"
timezone = "Local"

[program.daemon]
command = "server"
depends_on = ["job"]
max_runtime = "1m"
jitter = "5s"
`)
	want := []string{
		`test.toml:3: supervisor.exit_on[0]: job runs on a schedule and ends after each run: it cannot be in exit_on`,
		`test.toml:8: program.job.instances: a scheduled program runs one instance at each time`,
		`test.toml:9: program.job.restart: a scheduled program runs to completion: restart = "always" would make it a daemon`,
		`test.toml:10: program.job.critical: a scheduled program ends after each run: it cannot be critical`,
		`test.toml:14: program.bad.schedule: minute "61" must be a number from 0 to 59`,
		`test.toml:15: program.bad.timezone: unknown time zone "Mars/Olympus_Mons"`,
		`test.toml:19: program.worse.schedule: "* * *" has 3 fields; want 5`,
		`test.toml:20: program.worse.concurrency: must be one of allow, forbid, replace (got "sometimes")`,
		`test.toml:21: program.worse.max_runtime: must be more than 0`,
		`test.toml:25: program.never.schedule: "0 0 30 2 *" never fires`,
		`test.toml:26: program.never.timezone: must name a zone like "Europe/Berlin" or "UTC" (got "Local")`,
		`test.toml:30: program.daemon.depends_on[0]: job runs on a schedule (not between its times): a program cannot depend on it`,
		`test.toml:31: program.daemon.max_runtime: applies only with schedule`,
		`test.toml:32: program.daemon.jitter: applies only with schedule`,
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("missing %q", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
}
