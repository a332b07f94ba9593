package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/supervise-dev/supervise/schedule"
)

// A running config crosses an upgrade in place as JSON: the new binary
// takes the programs over under the config they were started with, and
// only then reads the file, as a reload. Every field is plain data but a
// schedule's parsed forms, which are derived again from what was written.

// scheduleJSON is a Schedule as it crosses: what was written, no parse.
type scheduleJSON struct {
	Expr             string        `json:"expr,omitempty"`
	Timezone         string        `json:"timezone,omitempty"`
	Concurrency      Concurrency   `json:"concurrency,omitempty"`
	StartingDeadline time.Duration `json:"starting_deadline,omitempty"`
	MaxRuntime       time.Duration `json:"max_runtime,omitempty"`
	Jitter           time.Duration `json:"jitter,omitempty"`
}

// MarshalJSON writes the schedule as written; its Spec and Location are
// parsed again on the way in.
func (s Schedule) MarshalJSON() ([]byte, error) {
	return json.Marshal(scheduleJSON{Expr: s.Expr, Timezone: s.Timezone, Concurrency: s.Concurrency,
		StartingDeadline: s.StartingDeadline, MaxRuntime: s.MaxRuntime, Jitter: s.Jitter})
}

// UnmarshalJSON reads what MarshalJSON wrote, parsing the zone and the
// expression as the file's decoder does.
func (s *Schedule) UnmarshalJSON(b []byte) error {
	var j scheduleJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Schedule{Expr: j.Expr, Timezone: j.Timezone, Concurrency: j.Concurrency,
		StartingDeadline: j.StartingDeadline, MaxRuntime: j.MaxRuntime, Jitter: j.Jitter}
	if j.Expr == "" {
		return nil // a daemon: nothing else applies
	}
	s.Location = time.UTC
	if j.Timezone != "" {
		loc, err := loadZone(j.Timezone)
		if err != nil {
			return err
		}
		s.Location = loc
	}
	spec, err := schedule.Parse(j.Expr, s.Location)
	if err != nil {
		return fmt.Errorf("schedule %q: %w", j.Expr, err)
	}
	s.Spec = spec
	switch j.Concurrency {
	case ConcurrencyAllow, ConcurrencyForbid, ConcurrencyReplace:
	default:
		return fmt.Errorf("schedule concurrency %q", j.Concurrency)
	}
	return nil
}

// CheckCarried checks a config that came across an upgrade, written by
// another binary: what the supervisor relies on of a config (names valid
// and unique, a command each, bounded counts, dependencies and exit_on
// that name programs, no dependency cycle) holds, as Load would have
// made it hold.
func (c *Config) CheckCarried() error {
	if c == nil {
		return errors.New("no config")
	}
	if c.File == "" || !filepath.IsAbs(c.Dir) {
		return errors.New("the config names no file or directory")
	}
	if s := c.Supervisor; s.Workers < 0 || s.Workers > 1024 || s.LogRing < 0 || s.LogRing > 64<<20 {
		return errors.New("[supervisor] workers or log_ring out of bounds")
	}
	if len(c.Programs) > 100000 {
		return fmt.Errorf("%d programs", len(c.Programs))
	}
	byName := map[string]bool{}
	for _, p := range c.Programs {
		if p == nil {
			return errors.New("a program is null")
		}
		if err := validName(p.Name); err != nil {
			return err
		}
		if byName[p.Name] {
			return fmt.Errorf("program %s is named twice", p.Name)
		}
		byName[p.Name] = true
		if len(p.Command) == 0 || p.Instances < 1 || p.Instances > 10000 {
			return fmt.Errorf("program %s: no command, or instances out of bounds", p.Name)
		}
	}
	for _, p := range c.Programs {
		for _, d := range p.DependsOn {
			if !byName[d] {
				return fmt.Errorf("program %s depends on %q, which is not there", p.Name, d)
			}
		}
	}
	for _, n := range c.Supervisor.ExitOn {
		if !byName[n] {
			return fmt.Errorf("exit_on names %q, which is not there", n)
		}
	}
	if cycles := findCycles(c.Programs); len(cycles) > 0 {
		return fmt.Errorf("dependency cycle: %v", cycles[0])
	}
	return nil
}
