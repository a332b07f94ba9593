package export

import (
	"fmt"
	"strings"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/schedule"
)

// A scheduled program becomes a .service that nothing wants and a .timer
// that the target wants: OnCalendar= from the cron expression (in the
// zone, as its suffix), Persistent= and RandomizedDelaySec= from
// starting_deadline and jitter, "@every" as OnActiveSec= and
// OnUnitActiveSec=. systemd does not start a unit that is still active,
// which is concurrency = "forbid"; "replace" and "allow" are warnings.

// timerFile is p's .timer unit, or nil when p is not scheduled. Values
// systemd cannot read as supervise does count in e.refused.
func (e *unitWriter) timerFile() *File {
	p := e.p
	if !p.Scheduled() {
		return nil
	}
	t := &unitWriter{opts: e.opts, ws: e.ws, p: p, byName: e.byName}
	t.u("Description", "name", join("", lit(e.opts.Prefix+": the times of "), display(p.Name)))
	t.u("PartOf", "", word(e.opts.Prefix+".target"))
	s := p.Schedule
	if every := s.Spec.Every(); every > 0 {
		t.s("OnActiveSec", "schedule", lit(seconds(every)))
		t.s("OnUnitActiveSec", "schedule", lit(seconds(every)))
		t.warn("schedule", "%q: systemd counts each interval from the last start (OnUnitActiveSec=), supervise on a fixed cadence", s.Expr)
	} else {
		for _, c := range OnCalendar(s.Spec, s.Timezone) {
			t.s("OnCalendar", "schedule", lit(c))
		}
	}
	// Times to the second: systemd's default AccuracySec= is a minute.
	t.s("AccuracySec", "", lit("1s"))
	if s.StartingDeadline > 0 {
		t.s("Persistent", "starting_deadline", lit("false"))
		t.warn("starting_deadline", "systemd has no deadline: a time missed while the machine was off is not run (Persistent=false), one missed while it slept runs at once however late")
	} else {
		// A time missed while the machine was off runs once, at boot.
		t.s("Persistent", "", lit("true"))
	}
	if s.Jitter > 0 {
		t.s("RandomizedDelaySec", "jitter", lit(seconds(s.Jitter)))
	}
	switch s.Concurrency {
	case config.ConcurrencyReplace:
		t.warn("concurrency", `"replace": systemd does not start a unit still running (as "forbid")`)
	case config.ConcurrencyAllow:
		t.warn("concurrency", `"allow": systemd cannot run two instances of one service at once; a time that comes while a run still runs is skipped (as "forbid")`)
	}
	if p.Instances > 1 {
		t.warn("instances", "a timer starts one unit")
	}
	e.refused += t.refused
	name := e.opts.Prefix + "-" + p.Name + ".timer"
	data := fmt.Sprintf("# Exported by supervise from program %s (line %d).\n[Unit]\n%s\n[Timer]\n%s", displayComment(p.Name), p.Line, t.unit.String(), t.svc.String())
	return &File{Name: name, Data: []byte(data)}
}

// jobService writes what a scheduled program's .service adds: the
// limit on a run.
func (e *unitWriter) jobService() {
	if s := e.p.Schedule; s.MaxRuntime > 0 {
		e.s("RuntimeMaxSec", "max_runtime", lit(seconds(s.MaxRuntime)))
	}
}

var systemdDays = [7]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}

// OnCalendar translates a cron schedule to systemd calendar events in zone
// ("" is UTC): one, or two when both day fields are restricted, since cron
// then takes a day that either matches and systemd one that both do.
// Every list is written out ("1..5,10"): systemd's repetitions are not
// cron's steps in every field. Empty for "@every".
func OnCalendar(spec *schedule.Schedule, zone string) []string {
	v := spec.Values()
	if v.Minute == nil {
		return nil
	}
	if zone == "" {
		zone = "UTC"
	}
	clock := fmt.Sprintf("%s:%s:%s", calendarList(v.Hour, 0, 23, 2), calendarList(v.Minute, 0, 59, 2), calendarList(v.Second, 0, 59, 2))
	event := func(dow, dom []int) string {
		var b strings.Builder
		if dow != nil && len(dow) < 7 {
			var days []string
			for _, r := range runs(dow) {
				if r[0] == r[1] {
					days = append(days, systemdDays[r[0]])
				} else {
					days = append(days, systemdDays[r[0]]+".."+systemdDays[r[1]])
				}
			}
			b.WriteString(strings.Join(days, ",") + " ")
		}
		fmt.Fprintf(&b, "*-%s-%s %s %s", calendarList(v.Month, 1, 12, 2), calendarList(dom, 1, 31, 2), clock, zone)
		return b.String()
	}
	if v.DaysCombineByOR() {
		all := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}
		return []string{event(nil, v.DayOfMonth), event(v.DayOfWeek, all)}
	}
	return []string{event(v.DayOfWeek, v.DayOfMonth)}
}

// calendarList is one calendar field: "*" when it is every value from lo
// to hi, else its runs, "a..b" or "a", comma-separated, zero-padded.
func calendarList(vals []int, lo, hi, width int) string {
	if len(vals) == hi-lo+1 {
		return "*"
	}
	var parts []string
	for _, r := range runs(vals) {
		a := fmt.Sprintf("%0*d", width, r[0])
		if r[0] == r[1] {
			parts = append(parts, a)
		} else {
			parts = append(parts, a+".."+fmt.Sprintf("%0*d", width, r[1]))
		}
	}
	return strings.Join(parts, ",")
}

// runs groups increasing values into runs of consecutive ones: [first, last].
func runs(vals []int) [][2]int {
	var out [][2]int
	for _, x := range vals {
		if n := len(out); n > 0 && out[n-1][1] == x-1 {
			out[n-1][1] = x
			continue
		}
		out = append(out, [2]int{x, x})
	}
	return out
}
