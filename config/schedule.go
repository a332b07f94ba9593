package config

import (
	"fmt"
	"time"

	"github.com/supervise-dev/supervise/schedule"
)

// Schedule makes a program a job: started at each time of Spec, run to
// completion, and not restarted until the next time (Restart applies to a
// failed run, retried with the crash backoff). The zero value is a daemon.
type Schedule struct {
	// Expr is the cron expression as written; "" for a daemon.
	Expr string
	// Spec is Expr parsed, in Location.
	Spec *schedule.Schedule
	// Timezone is the zone's name as written ("" is UTC); Location the
	// zone from Go's time database.
	Timezone string
	Location *time.Location
	// Concurrency says what a time that comes while the last run still
	// runs does (Kubernetes CronJob's concurrencyPolicy).
	Concurrency Concurrency
	// StartingDeadline: a time missed by more than this (the machine
	// slept, the supervisor was down or busy) is skipped. 0 runs the last
	// missed time however late.
	StartingDeadline time.Duration
	// MaxRuntime: a run still going after this is stopped (stop signal,
	// then the grace). 0 is no limit.
	MaxRuntime time.Duration
	// Jitter delays each run by a random time up to this, so that many
	// jobs on one time do not start at once.
	Jitter time.Duration
}

// Concurrency is a scheduled program's policy for overlapping runs.
type Concurrency string

const (
	// ConcurrencyForbid skips a time while the last run still runs.
	ConcurrencyForbid Concurrency = "forbid"
	// ConcurrencyReplace stops the running run and starts a new one.
	ConcurrencyReplace Concurrency = "replace"
	// ConcurrencyAllow starts another run beside the running ones, each
	// an instance of its own ("job#1"), up to a bound the supervisor sets.
	ConcurrencyAllow Concurrency = "allow"
)

// DefaultConcurrency: overlapping runs of a job rarely help (supercronic
// and systemd timers do not overlap either).
const DefaultConcurrency = ConcurrencyForbid

// Scheduled reports whether the program runs on a schedule.
func (p *Program) Scheduled() bool { return p.Schedule.Spec != nil }

// The schedule keys' decoders, listed in programKeys.

func (d *decoder) timezone(p *programDecoding, v *node) {
	name, ok := d.str(v)
	if !ok {
		return
	}
	loc, err := loadZone(name)
	if err != nil {
		d.errorf(v.path, "%v", err)
		return
	}
	p.Schedule.Timezone, p.Schedule.Location = name, loc
}

func (d *decoder) schedule(p *programDecoding, v *node) {
	expr, ok := d.str(v)
	if !ok {
		return
	}
	spec, err := schedule.Parse(expr, p.Schedule.Location)
	if err != nil {
		d.errorf(v.path, "%v", err)
		return
	}
	p.Schedule.Expr, p.Schedule.Spec = expr, spec
}

func (d *decoder) concurrency(p *programDecoding, v *node) {
	s, ok := d.enum(v, string(ConcurrencyAllow), string(ConcurrencyForbid), string(ConcurrencyReplace))
	if ok {
		p.Schedule.Concurrency = Concurrency(s)
	}
}

// loadZone is a zone of Go's time database (the system's, else the one
// embedded in the binary). "Local" is refused: it would mean whatever zone
// the machine is in, which a container rarely sets and no export can say.
func loadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, fmt.Errorf(`must name a zone like "Europe/Berlin" or "UTC" (got %q)`, name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf(`unknown time zone %q: want a name from the time zone database like "Europe/Berlin"`, name)
	}
	return loc, nil
}

func setPositive(d *decoder, v *node, dst *time.Duration) {
	if dur, ok := d.duration(v); ok {
		if dur <= 0 {
			d.errorf(v.path, "must be more than 0 (leave it out for none)")
			return
		}
		*dst = dur
	}
}

// fromProgram says a key came from the program's own table, not [defaults].
func fromProgram(v *node) bool { return v != nil && len(v.path) > 0 && v.path[0] == "program" }

// checkSchedule checks the schedule keys against the program's other keys,
// once all are decoded.
func (d *decoder) checkSchedule(p *programDecoding, t map[string]*node) {
	if p.isDefaults {
		return
	}
	s := &p.Schedule
	if !p.Scheduled() {
		if t["schedule"] != nil {
			return // already reported
		}
		for _, k := range []string{"timezone", "concurrency", "starting_deadline", "max_runtime", "jitter"} {
			if v := t[k]; fromProgram(v) {
				d.errorf(v.path, "applies only with schedule")
			}
		}
		*s = Schedule{}
		return
	}
	if s.Location == nil {
		s.Location = time.UTC
	}
	if s.Concurrency == "" {
		s.Concurrency = DefaultConcurrency
	}
	if p.Instances > 1 {
		d.errorf(t["instances"].path, "a scheduled program runs one instance at each time: leave instances out or at 1")
	}
	if v := t["restart"]; p.Restart == RestartAlways {
		if fromProgram(v) {
			d.errorf(v.path, `a scheduled program runs to completion: restart = "always" would make it a daemon (use "on-failure" to retry a failed run, or "never")`)
		}
		// The default (or [defaults]' "always"): retry failed runs only.
		p.Restart = RestartOnFailure
	}
	if p.Critical {
		d.errorf(t["critical"].path, "a scheduled program ends after each run: it cannot be critical")
	}
}

// checkScheduled finds what involves a scheduled program and another one:
// depending on it (it is down between runs, so a dependent would wait or
// stop with it), or exiting when it ends (it ends after every run).
func (d *decoder) checkScheduled(cfg *Config) {
	byName := map[string]*Program{}
	for _, p := range cfg.Programs {
		byName[p.Name] = p
	}
	for _, p := range cfg.Programs {
		for i, dep := range p.DependsOn {
			if q := byName[dep]; q != nil && q.Scheduled() {
				d.errorf(d.deps[p][i], "%s runs on a schedule (not between its times): a program cannot depend on it", dep)
			}
		}
	}
	for i, name := range cfg.Supervisor.ExitOn {
		if q := byName[name]; q != nil && q.Scheduled() {
			d.errorf(d.exitOn[i], "%s runs on a schedule and ends after each run: it cannot be in exit_on", name)
		}
	}
}
