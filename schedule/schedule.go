// Package schedule parses cron expressions and computes when they next fire
// in a time zone.
//
// The language is Vixie cron's: five fields (minute hour day-of-month month
// day-of-week), or six with seconds first; each field a list of values,
// ranges and steps ("1,5", "MON-FRI", "*/15", "10-40/10", "5/20" meaning
// 5-max/20); month and day names (JAN, MON; 7 is also Sunday); "?" as "*" in
// the day fields; the descriptors @yearly, @annually, @monthly, @weekly,
// @daily, @midnight, @hourly; and "@every 30s", a fixed interval.
//
// When both day fields are restricted a day matches if either does; if one
// of them starts with "*" both must (Vixie cron's rule, also for "*/2").
//
// Daylight saving time, as Vixie cron handles it: a job is "fixed-time"
// when neither its minute nor its hour field starts with "*". A fixed-time
// job whose time falls in a skipped hour (spring forward) runs once, at the
// instant the clock jumps; in a repeated hour (fall back) it runs only at
// the first occurrence. Other jobs follow the clock: they do not run at
// wall times that do not exist, and run at both occurrences of a repeated
// wall time, so "*/15 * * * *" stays every 15 minutes of real time.
package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed expression in its time zone. The zero value is not
// usable; get one from Parse.
type Schedule struct {
	expr  string
	loc   *time.Location
	every time.Duration // @every; the fields below are unused then

	sec, min, hour, dom, month, dow uint64 // bit i set: value i matches
	domStar, dowStar                bool   // the field started with * or ?
	fixed                           bool   // neither minute nor hour starts with *
	seconds                         bool   // written with a seconds field
}

// Fields of a parsed expression, for translating it to other schedulers.
type Fields struct {
	// Seconds says the expression had a seconds field.
	Seconds bool
	// The six fields as written (Second is "0" for five-field expressions);
	// descriptors are expanded.
	Second, Minute, Hour, DayOfMonth, Month, DayOfWeek string
}

type bounds struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	secBounds   = bounds{name: "second", min: 0, max: 59}
	minBounds   = bounds{name: "minute", min: 0, max: 59}
	hourBounds  = bounds{name: "hour", min: 0, max: 23}
	domBounds   = bounds{name: "day of month", min: 1, max: 31}
	monthBounds = bounds{name: "month", min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}}
	// 7 is Sunday too; folded onto 0 after parsing.
	dowBounds = bounds{name: "day of week", min: 0, max: 7, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}}
)

var descriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// MaxExprLen bounds an expression; real ones are a few dozen bytes.
const MaxExprLen = 1024

// Parse parses expr, whose wall-clock times are read in loc (nil is UTC).
func Parse(expr string, loc *time.Location) (*Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	if len(expr) > MaxExprLen {
		return nil, fmt.Errorf("expression is %d bytes long; at most %d", len(expr), MaxExprLen)
	}
	s := &Schedule{expr: expr, loc: loc}
	text := strings.TrimSpace(expr)
	if rest, ok := strings.CutPrefix(text, "@every"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, fmt.Errorf(`"@every" takes a duration like 30s or 5m: %w`, err)
		}
		if d < time.Second || d%time.Second != 0 {
			return nil, fmt.Errorf(`"@every %s": the interval must be a whole number of seconds, at least 1s`, d)
		}
		s.every = d
		return s, nil
	}
	if strings.HasPrefix(text, "@") {
		d, ok := descriptors[strings.ToLower(text)]
		if !ok {
			return nil, fmt.Errorf("unknown descriptor %q (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every DURATION)", text)
		}
		text = d
	}
	f := strings.Fields(text)
	switch len(f) {
	case 5:
		f = append([]string{"0"}, f...)
	case 6:
		s.seconds = true
	default:
		return nil, fmt.Errorf("%q has %d fields; want 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)", text, len(f))
	}
	var err error
	set := func(dst *uint64, field string, b bounds, qmark bool) bool {
		if err != nil {
			return false
		}
		var star bool
		*dst, star, err = parseField(field, b, qmark)
		return star
	}
	set(&s.sec, f[0], secBounds, false)
	minStar := set(&s.min, f[1], minBounds, false)
	hourStar := set(&s.hour, f[2], hourBounds, false)
	s.domStar = set(&s.dom, f[3], domBounds, true)
	set(&s.month, f[4], monthBounds, false)
	s.dowStar = set(&s.dow, f[5], dowBounds, true)
	if err != nil {
		return nil, err
	}
	if s.dow&(1<<7) != 0 {
		s.dow = s.dow&^(1<<7) | 1
	}
	s.fixed = !minStar && !hourStar
	if s.dowStar {
		// With day-of-week unrestricted, some listed day must exist in
		// some listed month, or the schedule never fires.
		if !s.someDayExists() {
			return nil, fmt.Errorf("%q never fires: no listed day of month exists in a listed month", strings.TrimSpace(expr))
		}
	}
	return s, nil
}

// someDayExists reports whether a day the dom field lists exists in a month
// the month field lists (29 February counts: leap years come).
func (s *Schedule) someDayExists() bool {
	days := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		if s.month&(1<<m) == 0 {
			continue
		}
		for d := 1; d <= days[m]; d++ {
			if s.dom&(1<<d) != 0 {
				return true
			}
		}
	}
	return false
}

// parseField parses one comma-separated field into a bit set; star says it
// started with "*" (or "?" where qmark allows it).
func parseField(field string, b bounds, qmark bool) (bits uint64, star bool, err error) {
	for i, part := range strings.Split(field, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		// "*" and "N/step" run to the top, which for days of the week is
		// Saturday: 7 is only an alias of Sunday.
		top := b.max
		if b.name == dowBounds.name {
			top = 6
		}
		lo, hi := b.min, top
		switch {
		case rng == "*" || (qmark && rng == "?"):
			if i == 0 {
				star = true
			}
		default:
			loText, hiText, isRange := strings.Cut(rng, "-")
			if lo, err = value(loText, b); err != nil {
				return 0, false, err
			}
			switch {
			case isRange:
				if hi, err = value(hiText, b); err != nil {
					return 0, false, err
				}
				if hi < lo {
					return 0, false, fmt.Errorf("%s range %q ends before it starts", b.name, rng)
				}
			case !hasStep:
				hi = lo
			}
		}
		step := 1
		if hasStep {
			step, err = strconv.Atoi(stepText)
			if err != nil || step < 1 || step > b.max {
				return 0, false, fmt.Errorf("%s step %q must be a number from 1 to %d", b.name, stepText, b.max)
			}
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << v
		}
	}
	return bits, star, nil
}

func value(text string, b bounds) (int, error) {
	if n, ok := b.names[strings.ToLower(text)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < b.min || n > b.max {
		return 0, fmt.Errorf("%s %q must be a number from %d to %d%s", b.name, text, b.min, b.max, nameHint(b))
	}
	return n, nil
}

func nameHint(b bounds) string {
	switch b.name {
	case "month":
		return " or JAN-DEC"
	case "day of week":
		return " or SUN-SAT"
	}
	return ""
}

// String is the expression as written.
func (s *Schedule) String() string { return s.expr }

// Location is the zone the wall-clock fields are read in.
func (s *Schedule) Location() *time.Location { return s.loc }

// Every is the interval of an "@every" schedule, else 0.
func (s *Schedule) Every() time.Duration { return s.every }

// FixedTime reports whether neither minute nor hour starts with "*", which
// decides how a daylight-saving change is handled (see the package doc).
func (s *Schedule) FixedTime() bool { return s.fixed }

// Fields returns the fields as written, descriptors expanded. It is empty
// for "@every".
func (s *Schedule) Fields() Fields {
	if s.every > 0 {
		return Fields{}
	}
	text := strings.TrimSpace(s.expr)
	if d, ok := descriptors[strings.ToLower(text)]; ok {
		text = d
	}
	f := strings.Fields(text)
	if len(f) == 5 {
		f = append([]string{"0"}, f...)
	}
	return Fields{Seconds: s.seconds, Second: f[0], Minute: f[1], Hour: f[2], DayOfMonth: f[3], Month: f[4], DayOfWeek: f[5]}
}

// horizon bounds the search for the next time. The Gregorian calendar's
// days of the week repeat every 28 years (between century years that are
// not leap years), so a schedule with no time in 30 years has none: a
// day of a month on a weekday (AND, when a day field starts with "*") can
// be 11 years away.
const horizon = 30

// Next returns the first time strictly after after at which the schedule
// fires, in the schedule's zone, or the zero time if there is none in the
// next 30 years.
func (s *Schedule) Next(after time.Time) time.Time {
	if s.every > 0 {
		return after.Add(s.every).In(s.loc)
	}
	after = after.In(s.loc)
	best := s.scan(after, wall(after), time.Time{})
	// If a fall-back transition follows, wall times before after's wall
	// time come again once the clock is set back: look there too.
	if _, end := after.ZoneBounds(); !end.IsZero() {
		_, offBefore := after.Zone()
		_, offAfter := end.Zone()
		if back := time.Duration(offBefore-offAfter) * time.Second; back > 0 {
			from := wall(end.In(s.loc))
			if t := s.scan(end.Add(-time.Nanosecond), from.Add(-time.Second), from.Add(back)); !t.IsZero() && (best.IsZero() || t.Before(best)) {
				best = t
			}
		}
	}
	return best
}

// scan walks matching wall times after w (up to until, if set) and returns
// the first instant after after they map to.
func (s *Schedule) scan(after, w, until time.Time) time.Time {
	limit := w.AddDate(horizon, 0, 0)
	if !until.IsZero() {
		limit = until
	}
	for {
		w = s.nextWall(w, limit)
		if w.IsZero() {
			return time.Time{}
		}
		for _, t := range s.instants(w) {
			if t.After(after) {
				return t
			}
		}
	}
}

// wall is t's wall-clock reading as a naive time in UTC, where calendar
// arithmetic has no gaps or repeats.
func wall(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	return time.Date(y, mo, d, h, mi, sec, 0, time.UTC)
}

// instants maps a matching wall time to when it fires: normally one
// instant; in a repeated hour the first occurrence (fixed-time) or both; in
// a skipped hour the jump (fixed-time) or none.
func (s *Schedule) instants(w time.Time) []time.Time {
	naive := w.Unix()
	var out []time.Time
	var offs []int
	for _, probe := range []int64{naive - 86400, naive, naive + 86400} {
		_, off := time.Unix(probe, 0).In(s.loc).Zone()
		dup := false
		for _, o := range offs {
			dup = dup || o == off
		}
		if dup {
			continue
		}
		offs = append(offs, off)
		t := time.Unix(naive-int64(off), 0).In(s.loc)
		if wall(t).Equal(w) {
			out = append(out, t)
		}
	}
	if len(out) == 2 && out[1].Before(out[0]) {
		out[0], out[1] = out[1], out[0]
	}
	if len(out) == 2 && out[0].Equal(out[1]) {
		out = out[:1]
	}
	switch {
	case len(out) > 1 && s.fixed:
		return out[:1]
	case len(out) == 0 && s.fixed:
		// A skipped wall time: the clock jumped over it at the start of
		// the zone the smallest offset lands in.
		lo := offs[0]
		for _, o := range offs {
			lo = min(lo, o)
		}
		start, _ := time.Unix(naive-int64(lo), 0).In(s.loc).ZoneBounds()
		if start.IsZero() {
			return nil
		}
		return []time.Time{start.In(s.loc)}
	}
	return out
}

// nextWall returns the first wall time after w that the fields match, or
// the zero time if there is none before limit.
func (s *Schedule) nextWall(w, limit time.Time) time.Time {
	t := w.Truncate(time.Second).Add(time.Second)
	for t.Before(limit) {
		y, mo, d := t.Date()
		h, mi, sec := t.Clock()
		switch {
		case s.month&(1<<int(mo)) == 0:
			t = time.Date(y, mo+1, 1, 0, 0, 0, 0, time.UTC)
		case !s.dayMatches(t):
			t = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
		case s.hour&(1<<h) == 0:
			t = time.Date(y, mo, d, h+1, 0, 0, 0, time.UTC)
		case s.min&(1<<mi) == 0:
			t = time.Date(y, mo, d, h, mi+1, 0, 0, time.UTC)
		case s.sec&(1<<sec) == 0:
			t = t.Add(time.Second)
		default:
			return t
		}
	}
	return time.Time{}
}

func (s *Schedule) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<t.Day()) != 0
	dow := s.dow&(1<<int(t.Weekday())) != 0
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}

// Values are the values each field matches, in increasing order, for
// translating a schedule to other schedulers. DayOfWeek holds 0-6 (Sunday
// is 0). The Star flags say a day field started with "*" or "?", which
// decides how the two day fields combine (see the package doc).
type Values struct {
	Second, Minute, Hour, DayOfMonth, Month, DayOfWeek []int
	DayOfMonthStar, DayOfWeekStar                      bool
}

// Values returns the fields' values; empty for "@every".
func (s *Schedule) Values() Values {
	if s.every > 0 {
		return Values{}
	}
	list := func(bits uint64, lo, hi int) []int {
		var out []int
		for v := lo; v <= hi; v++ {
			if bits&(1<<v) != 0 {
				out = append(out, v)
			}
		}
		return out
	}
	return Values{
		Second: list(s.sec, 0, 59), Minute: list(s.min, 0, 59), Hour: list(s.hour, 0, 23),
		DayOfMonth: list(s.dom, 1, 31), Month: list(s.month, 1, 12), DayOfWeek: list(s.dow, 0, 6),
		DayOfMonthStar: s.domStar, DayOfWeekStar: s.dowStar,
	}
}

// DaysCombineByOR reports whether a day matches when either day field
// does (both restricted), rather than when both do.
func (v Values) DaysCombineByOR() bool { return !v.DayOfMonthStar && !v.DayOfWeekStar }
