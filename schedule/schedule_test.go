package schedule

import (
	"strings"
	"testing"
	"time"
)

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

func at(t *testing.T, loc *time.Location, s string) time.Time {
	t.Helper()
	v, err := time.ParseInLocation("2006-01-02 15:04:05", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// nexts returns the first n times expr fires after from, in UTC RFC 3339.
func nexts(t *testing.T, expr string, loc *time.Location, from time.Time, n int) []string {
	t.Helper()
	s, err := Parse(expr, loc)
	if err != nil {
		t.Fatalf("Parse(%q): %v", expr, err)
	}
	var out []string
	for range n {
		from = s.Next(from)
		if from.IsZero() {
			out = append(out, "never")
			break
		}
		out = append(out, from.UTC().Format(time.RFC3339))
	}
	return out
}

func TestNextEveryKind(t *testing.T) {
	from := time.Date(2026, 1, 30, 22, 58, 30, 0, time.UTC) // a Friday
	cases := []struct {
		expr string
		want []string
	}{
		{"*/5 * * * *", []string{"2026-01-30T23:00:00Z", "2026-01-30T23:05:00Z"}},
		{"0 * * * *", []string{"2026-01-30T23:00:00Z", "2026-01-31T00:00:00Z"}},
		{"30 */10 * * * *", []string{"2026-01-30T22:58:30Z", "2026-01-30T23:00:30Z"}[1:]},
		{"*/20 * * * * *", []string{"2026-01-30T22:58:40Z", "2026-01-30T22:59:00Z", "2026-01-30T22:59:20Z"}},
		{"0 9-17/4 * * MON-FRI", []string{"2026-02-02T09:00:00Z", "2026-02-02T13:00:00Z", "2026-02-02T17:00:00Z", "2026-02-03T09:00:00Z"}},
		{"15,45 8 * * sat,SUN", []string{"2026-01-31T08:15:00Z", "2026-01-31T08:45:00Z", "2026-02-01T08:15:00Z"}},
		{"0 0 1 FEB-APR/2 *", []string{"2026-02-01T00:00:00Z", "2026-04-01T00:00:00Z", "2027-02-01T00:00:00Z"}},
		{"0 12 ? * 7", []string{"2026-02-01T12:00:00Z", "2026-02-08T12:00:00Z"}},
		{"0 0 13 * 5", []string{"2026-02-06T00:00:00Z", "2026-02-13T00:00:00Z", "2026-02-20T00:00:00Z"}}, // Vixie OR: the 13th or a Friday
		{"0 0 */10 * 5", []string{"2026-05-01T00:00:00Z", "2026-07-31T00:00:00Z"}},                       // "*/10" is a star: AND (1st, 11th, 21st, 31st that are Fridays)
		{"0 0 * * FRI/1", []string{"2026-01-31T00:00:00Z", "2026-02-06T00:00:00Z"}},                      // FRI-SAT: 7 is not reached by a step
		{"5/20 0 1 1 *", []string{"2027-01-01T00:05:00Z", "2027-01-01T00:25:00Z", "2027-01-01T00:45:00Z"}},
		{"@yearly", []string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
		{"@annually", []string{"2027-01-01T00:00:00Z"}},
		{"@monthly", []string{"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"}},
		{"@weekly", []string{"2026-02-01T00:00:00Z", "2026-02-08T00:00:00Z"}},
		{"@daily", []string{"2026-01-31T00:00:00Z", "2026-02-01T00:00:00Z"}},
		{"@midnight", []string{"2026-01-31T00:00:00Z"}},
		{"@hourly", []string{"2026-01-30T23:00:00Z", "2026-01-31T00:00:00Z"}},
		{"@every 90s", []string{"2026-01-30T23:00:00Z", "2026-01-30T23:01:30Z"}},
		{"@every 1h", []string{"2026-01-30T23:58:30Z"}},
	}
	for _, c := range cases {
		got := nexts(t, c.expr, nil, from, len(c.want))
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%q after %s:\n got %v\nwant %v", c.expr, from.Format(time.RFC3339), got, c.want)
		}
	}
}

func TestNextLeapYears(t *testing.T) {
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	got := nexts(t, "0 0 29 2 *", nil, from, 3)
	want := []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z", "2036-02-29T00:00:00Z"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("29 February: got %v, want %v", got, want)
	}
	// 2100 is not a leap year: from 2096 the next is 2104, eight years on.
	got = nexts(t, "0 0 29 2 *", nil, time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC), 1)
	if got[0] != "2104-02-29T00:00:00Z" {
		t.Errorf("29 February after 2096: got %v, want 2104-02-29", got)
	}
	// The last day of February as "28-29": both in a leap year.
	got = nexts(t, "0 0 28-29 2 *", nil, time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC), 3)
	want = []string{"2028-02-28T00:00:00Z", "2028-02-29T00:00:00Z", "2029-02-28T00:00:00Z"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("28-29 February: got %v, want %v", got, want)
	}
}

func TestDaysThatNeverExist(t *testing.T) {
	for _, expr := range []string{"0 0 30 2 *", "0 0 31 2,4,6,9,11 *", "0 0 30-31 FEB *"} {
		if _, err := Parse(expr, nil); err == nil || !strings.Contains(err.Error(), "never fires") {
			t.Errorf("Parse(%q) = %v, want a never-fires error", expr, err)
		}
	}
	// With a day of week as well, the OR lets it fire on Mondays.
	got := nexts(t, "0 0 30 2 MON", nil, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), 2)
	if got[0] != "2026-02-02T00:00:00Z" || got[1] != "2026-02-09T00:00:00Z" {
		t.Errorf("30 Feb or Monday: got %v", got)
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		"":                        "has 0 fields",
		"* * * *":                 "has 4 fields",
		"* * * * * * *":           "has 7 fields",
		"60 * * * *":              `minute "60" must be a number from 0 to 59`,
		"* 24 * * *":              `hour "24"`,
		"* * 0 * *":               `day of month "0"`,
		"* * * 13 *":              `month "13" must be a number from 1 to 12 or JAN-DEC`,
		"* * * * 8":               `day of week "8"`,
		"* * * FOO *":             `month "FOO"`,
		"5-1 * * * *":             "ends before it starts",
		"*/0 * * * *":             `minute step "0"`,
		"*/x * * * *":             `minute step "x"`,
		"? * * * *":               `minute "?"`,
		"1,,2 * * * *":            `minute ""`,
		"@often":                  "unknown descriptor",
		"@every":                  "@every",
		"@every 1.5s":             "whole number of seconds",
		"@every 0s":               "at least 1s",
		"@every -5m":              "at least 1s",
		strings.Repeat("*", 2000): "bytes long",
	}
	for expr, want := range cases {
		_, err := Parse(expr, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", expr, err, want)
		}
	}
}

func TestDSTSpringForward(t *testing.T) {
	cases := []struct {
		zone, from, expr string
		want             []string
	}{
		// Berlin skips 02:00-03:00 on 29 March 2026 (01:00 UTC). A
		// fixed-time job in the gap runs at the jump, once.
		{"Europe/Berlin", "2026-03-28 12:00:00", "30 2 * * *", []string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"Europe/Berlin", "2026-03-28 12:00:00", "0,30 2 * * *", []string{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"}},
		// A fixed job just after the gap is not moved.
		{"Europe/Berlin", "2026-03-29 00:00:00", "0 3 * * *", []string{"2026-03-29T01:00:00Z", "2026-03-30T01:00:00Z"}},
		// A wildcard job follows the clock: no 02:30 that day.
		{"Europe/Berlin", "2026-03-29 01:00:00", "30 * * * *", []string{"2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z"}},
		{"Europe/Berlin", "2026-03-29 01:50:00", "*/20 * * * *", []string{"2026-03-29T01:00:00Z", "2026-03-29T01:20:00Z"}},
		// New York skips 02:00-03:00 on 8 March 2026 (07:00 UTC).
		{"America/New_York", "2026-03-07 12:00:00", "15 2 * * *", []string{"2026-03-08T07:00:00Z", "2026-03-09T06:15:00Z"}},
		{"America/New_York", "2026-03-08 01:30:00", "@hourly", []string{"2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
	}
	for _, c := range cases {
		loc := mustLoc(t, c.zone)
		got := nexts(t, c.expr, loc, at(t, loc, c.from), len(c.want))
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s %q after %s:\n got %v\nwant %v", c.zone, c.expr, c.from, got, c.want)
		}
	}
}

func TestDSTFallBack(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	newYork := mustLoc(t, "America/New_York")
	cases := []struct {
		loc  *time.Location
		from time.Time
		expr string
		want []string
	}{
		// Berlin repeats 02:00-03:00 on 25 October 2026: 00:00-01:00 UTC
		// (CEST) and 01:00-02:00 UTC (CET). A fixed-time job runs once.
		{berlin, time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC), "30 2 * * *", []string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		// ... also when asked from inside the first occurrence, after its time.
		{berlin, time.Date(2026, 10, 25, 0, 40, 0, 0, time.UTC), "30 2 * * *", []string{"2026-10-26T01:30:00Z"}},
		// A wildcard job runs in both occurrences: every 20 real minutes.
		{berlin, time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), "*/20 * * * *", []string{
			"2026-10-25T00:40:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:20:00Z", "2026-10-25T01:40:00Z", "2026-10-25T02:00:00Z"}},
		{berlin, time.Date(2026, 10, 24, 23, 50, 0, 0, time.UTC), "@hourly", []string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
		// Seconds granularity across the repeat.
		{berlin, time.Date(2026, 10, 25, 0, 59, 50, 0, time.UTC), "*/10 * * * * *", []string{"2026-10-25T01:00:00Z", "2026-10-25T01:00:10Z"}},
		// New York repeats 01:00-02:00 on 1 November 2026: 05:00-06:00 and 06:00-07:00 UTC.
		{newYork, time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC), "30 1 * * *", []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{newYork, time.Date(2026, 11, 1, 5, 45, 0, 0, time.UTC), "0,30 * * * *", []string{"2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z"}},
		// @every is real time whatever the clock does.
		{newYork, time.Date(2026, 11, 1, 5, 45, 0, 0, time.UTC), "@every 30m", []string{"2026-11-01T06:15:00Z", "2026-11-01T06:45:00Z"}},
	}
	for _, c := range cases {
		got := nexts(t, c.expr, c.loc, c.from, len(c.want))
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s %q after %s:\n got %v\nwant %v", c.loc, c.expr, c.from.Format(time.RFC3339), got, c.want)
		}
	}
}

func TestNextIsInTheZoneAndStrictlyAfter(t *testing.T) {
	loc := mustLoc(t, "Europe/Berlin")
	s, err := Parse("0 9 * * *", loc)
	if err != nil {
		t.Fatal(err)
	}
	from := at(t, loc, "2026-06-01 09:00:00")
	next := s.Next(from)
	if got := next.Format("2006-01-02 15:04 MST"); got != "2026-06-02 09:00 CEST" {
		t.Errorf("Next(%v) = %s, want 2026-06-02 09:00 CEST", from, got)
	}
	if next.Location() != loc {
		t.Errorf("Next is in %v, want %v", next.Location(), loc)
	}
}

func TestFields(t *testing.T) {
	s, _ := Parse("@weekly", nil)
	if f := s.Fields(); f != (Fields{Second: "0", Minute: "0", Hour: "0", DayOfMonth: "*", Month: "*", DayOfWeek: "0"}) {
		t.Errorf("@weekly fields = %+v", f)
	}
	s, _ = Parse("5 */2 * * * *", nil)
	if f := s.Fields(); !f.Seconds || f.Second != "5" || f.Minute != "*/2" {
		t.Errorf("six-field fields = %+v", f)
	}
	s, _ = Parse("@every 5m", nil)
	if s.Every() != 5*time.Minute || s.Fields() != (Fields{}) {
		t.Errorf("@every 5m: every %v fields %+v", s.Every(), s.Fields())
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"*/5 * * * *", "0 0 29 2 *", "@every 3s", "1-5/2,7 * ? JAN-MAR/2 mon", "@daily"} {
		f.Add(s)
	}
	from := time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := Parse(expr, loc)
		if err != nil {
			return
		}
		if next := s.Next(from); !next.IsZero() && !next.After(from) {
			t.Fatalf("%q: Next(%v) = %v, not after", expr, from, next)
		}
	})
}

// The rarest schedules repeat with the calendar's 28-year cycle: the next
// time may be more than ten years away, and is still found.
func TestNextFarAway(t *testing.T) {
	// "*/30" starts with *: the day fields combine by AND, so this is a
	// 1 February that is a Monday (2027, then 2038).
	got := nexts(t, "0 0 */30 2 MON", nil, time.Date(2027, 2, 2, 0, 0, 0, 0, time.UTC), 1)
	if got[0] != "2038-02-01T00:00:00Z" {
		t.Errorf("got %v, want 2038-02-01", got)
	}
}
