package export

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/schedule"
)

// cronJob is a scheduled program as a batch/v1 CronJob: the schedule (in
// timeZone), concurrencyPolicy, startingDeadlineSeconds, and a Job
// template whose activeDeadlineSeconds is max_runtime and whose
// backoffLimit says how often a failed run is retried.
func (k *kubeWriter) cronJob() obj {
	p := k.p
	s := p.Schedule
	labels := obj{{"app.kubernetes.io/name", k.opts.Name}, {"app.kubernetes.io/component", DNSLabel(p.Name)}}
	pod := k.podSpec()
	policy, backoffLimit := "OnFailure", 6 // the Job default
	if p.Restart == config.RestartNever {
		policy, backoffLimit = "Never", 0
	} else {
		k.warn("restart", `"on-failure": a failed run is retried up to the Job's default backoffLimit of 6, not until the next time`)
	}
	pod.set("restartPolicy", policy)
	job := obj{{"backoffLimit", backoffLimit}}
	if s.MaxRuntime > 0 {
		job = append(job, kv{"activeDeadlineSeconds", ceilSeconds(s.MaxRuntime)})
	}
	job = append(job, kv{"template", obj{{"metadata", obj{{"labels", labels}}}, {"spec", pod}}})

	expr, warns := CronJobSchedule(s.Spec)
	for _, w := range warns {
		k.warn("schedule", "%s", w)
	}
	spec := obj{{"schedule", expr}}
	if s.Timezone != "" {
		spec = append(spec, kv{"timeZone", s.Timezone})
	}
	policy, ok := cronJobConcurrency[s.Concurrency]
	if !ok {
		policy = "Forbid" // the loader's default
	}
	spec = append(spec, kv{"concurrencyPolicy", policy})
	if d := s.StartingDeadline; d > 0 {
		spec = append(spec, kv{"startingDeadlineSeconds", ceilSeconds(d)})
		if d < 10*time.Second {
			k.warn("starting_deadline", "%s: the CronJob controller looks every 10s, so a deadline under 10s may skip runs", d)
		}
	}
	if !p.Autostart {
		spec = append(spec, kv{"suspend", true})
		k.warn("autostart", "false: the CronJob is suspended; resume it to run")
	}
	if s.Jitter > 0 {
		k.warn("jitter", "not mapped: a CronJob starts at its times")
	}
	if p.Instances > 1 {
		k.warn("instances", "a CronJob runs one Pod at each time")
	}
	spec = append(spec, kv{"jobTemplate", obj{{"metadata", obj{{"labels", labels}}}, {"spec", job}}})
	return obj{{"apiVersion", "batch/v1"}, {"kind", "CronJob"}, {"metadata", k.meta(p.Name)}, {"spec", spec}}
}

// CronJobSchedule writes spec as a CronJob's schedule: five fields as the
// CronJob controller's parser (robfig/cron's standard one) reads them, with
// a warning for what it cannot say as supervise does: times under a
// minute, "@every" that no cron expression repeats, and Vixie cron's rule
// that a day field starting with "*" makes the days combine by AND.
func CronJobSchedule(spec *schedule.Schedule) (string, []string) {
	var warns []string
	if d := spec.Every(); d > 0 {
		switch m, h := int(d/time.Minute), int(d/time.Hour); {
		case d < time.Minute:
			return "* * * * *", []string{fmt.Sprintf("%q: a CronJob runs at most once a minute; exported as every minute", spec.String())}
		case d%time.Minute == 0 && m < 60 && 60%m == 0:
			return cronStep(m) + " * * * *", nil
		case d%time.Hour == 0 && h < 24 && 24%h == 0:
			return "0 " + cronStep(h) + " * * *", nil
		case d == 24*time.Hour:
			return "0 0 * * *", nil
		}
		return "@every " + d.String(), []string{fmt.Sprintf("%q repeats no cron expression: written as robfig/cron's @every, which the CronJob controller parses but the Kubernetes documentation does not promise", spec.String())}
	}
	v := spec.Values()
	if len(v.Second) != 1 || v.Second[0] != 0 {
		warns = append(warns, fmt.Sprintf("%q: a CronJob runs at most once a minute; the seconds are dropped (second 0 of each matching minute)", spec.String()))
	}
	dom := cronField(v.DayOfMonth, 1, 31, v.DayOfMonthStar)
	dow := cronField(v.DayOfWeek, 0, 6, v.DayOfWeekStar)
	if (v.DayOfMonthStar && dom != "*" && dow != "*") || (v.DayOfWeekStar && dow != "*" && dom != "*") {
		warns = append(warns, fmt.Sprintf(`%q: a day field starting with "*" makes supervise (as cron) take a day both fields match; the CronJob controller takes a day either matches`, spec.String()))
	}
	fields := []string{
		cronField(v.Minute, 0, 59, true), cronField(v.Hour, 0, 23, true), dom, cronField(v.Month, 1, 12, true), dow,
	}
	return strings.Join(fields, " "), warns
}

func cronStep(n int) string {
	if n == 1 {
		return "*"
	}
	return "*/" + strconv.Itoa(n)
}

// cronField is one field from its values: "*" when it is every value and
// star (a day field that was restricted to every day stays "1-31", so
// that the days combine as written), "*/N" for every Nth from the first,
// else runs "a-b" and values, comma-separated.
func cronField(vals []int, lo, hi int, star bool) string {
	if len(vals) == hi-lo+1 {
		if star {
			return "*"
		}
		return strconv.Itoa(lo) + "-" + strconv.Itoa(hi)
	}
	if len(vals) > 1 && vals[0] == lo {
		step := vals[1] - vals[0]
		every := true
		for i, x := range vals {
			every = every && x == lo+i*step
		}
		if every && vals[len(vals)-1]+step > hi {
			return "*/" + strconv.Itoa(step)
		}
	}
	var parts []string
	for _, r := range runs(vals) {
		if r[0] == r[1] {
			parts = append(parts, strconv.Itoa(r[0]))
		} else {
			parts = append(parts, strconv.Itoa(r[0])+"-"+strconv.Itoa(r[1]))
		}
	}
	return strings.Join(parts, ",")
}

// cronJobConcurrency is concurrencyPolicy by concurrency: the same three
// policies (supervise bounds the runs "allow" starts; a CronJob's Jobs are
// bounded by the namespace's quota, if any).
var cronJobConcurrency = map[config.Concurrency]string{
	config.ConcurrencyForbid:  "Forbid",
	config.ConcurrencyReplace: "Replace",
	config.ConcurrencyAllow:   "Allow",
}
