package conformance

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/supervise-dev/supervise/schedule"
)

// TestScheduleMatchesRobfigCron parses seeded random cron expressions with
// package schedule and with robfig/cron's parser and compares the next eight
// times from a random start, in UTC and in a zone without daylight saving
// (where the two differ by design, see package schedule's doc).
//
// Known differences the generator stays clear of: robfig/cron treats "*/n"
// in a day field as a restriction (so combined with the other day field by
// OR), Vixie cron and package schedule as a star (AND); robfig/cron has no
// 7 for Sunday; expressions that never fire (30 February) parse in
// robfig/cron and are refused by package schedule, which the test checks.
func TestScheduleMatchesRobfigCron(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 2000
	}
	parser := cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for seed := range n {
		r := rand.New(rand.NewSource(int64(seed)))
		expr := randomExpr(r)
		loc := time.UTC
		if r.Intn(3) == 0 {
			loc = kolkata
		}
		from := time.Date(2020+r.Intn(10), time.Month(1+r.Intn(12)), 1+r.Intn(28), r.Intn(24), r.Intn(60), r.Intn(60), 0, loc)
		theirs, err := parser.Parse(expr)
		if err != nil {
			t.Fatalf("seed %d: robfig/cron refuses %q: %v (the generator should make valid expressions)", seed, expr, err)
		}
		ours, err := schedule.Parse(expr, loc)
		if err != nil {
			if strings.Contains(err.Error(), "never fires") && theirs.Next(from).IsZero() {
				continue
			}
			t.Fatalf("seed %d: schedule refuses %q, which robfig/cron takes: %v", seed, expr, err)
		}
		a, b := from, from
		for i := range 8 {
			a, b = ours.Next(a), theirs.Next(b.In(loc))
			if b.IsZero() {
				// robfig/cron looks five years ahead, we ten.
				break
			}
			if !a.Equal(b) {
				t.Fatalf("seed %d: %q in %s, next #%d after %s: schedule says %s, robfig/cron %s",
					seed, expr, loc, i+1, from.Format(time.RFC3339), a.Format(time.RFC3339), b.Format(time.RFC3339))
			}
		}
		compared++
	}
	t.Logf("%d expressions compared", compared)
}

var (
	monthNames = []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	dayNames   = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
)

func randomExpr(r *rand.Rand) string {
	switch r.Intn(20) {
	case 0:
		return []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}[r.Intn(7)]
	case 1:
		return fmt.Sprintf("@every %ds", 1+r.Intn(100000))
	}
	fields := []string{
		randomField(r, 0, 59, nil, false),
		randomField(r, 0, 23, nil, false),
		randomField(r, 1, 31, nil, true),
		randomField(r, 1, 12, monthNames, false),
		randomField(r, 0, 6, dayNames, true),
	}
	if r.Intn(2) == 0 {
		fields = append([]string{randomField(r, 0, 59, nil, false)}, fields...)
	}
	return strings.Join(fields, " ")
}

// randomField makes one field: "*" often, else a list of values, ranges
// and steps; names as well where the field has them.
func randomField(r *rand.Rand, lo, hi int, names []string, day bool) string {
	if r.Intn(3) == 0 {
		if day && r.Intn(3) == 0 {
			return "?"
		}
		if !day && r.Intn(2) == 0 {
			return fmt.Sprintf("*/%d", 1+r.Intn(hi))
		}
		return "*"
	}
	val := func(v int) string {
		if names != nil && r.Intn(2) == 0 {
			name := names[v-lo]
			if r.Intn(2) == 0 {
				name = strings.ToLower(name)
			}
			return name
		}
		return fmt.Sprint(v)
	}
	var parts []string
	for range 1 + r.Intn(3) {
		a := lo + r.Intn(hi-lo+1)
		switch r.Intn(4) {
		case 0:
			parts = append(parts, val(a))
		case 1:
			b := a + r.Intn(hi-a+1)
			parts = append(parts, val(a)+"-"+val(b))
		case 2:
			b := a + r.Intn(hi-a+1)
			parts = append(parts, fmt.Sprintf("%s-%s/%d", val(a), val(b), 1+r.Intn(hi)))
		default:
			parts = append(parts, fmt.Sprintf("%s/%d", val(a), 1+r.Intn(hi)))
		}
	}
	return strings.Join(parts, ",")
}
