package notify

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestLineMatcher(t *testing.T) {
	m, err := NewLineMatcher(`^listening on :\d+$`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"listening on :8080", true},
		{"listening on :8080\n", true},
		{"listening on :8080\r\n", true},
		{"listening on :http", false},
		{"  listening on :8080", false},
		{"", false},
	} {
		if got := m.Match(tc.line); got != tc.want {
			t.Errorf("Match(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
	if m.String() != `^listening on :\d+$` {
		t.Errorf("String() = %q", m.String())
	}
	if _, err := NewLineMatcher(`ready(`); err == nil {
		t.Error("NewLineMatcher(\"ready(\"): no error")
	}
}

func TestLineMatcherLiteral(t *testing.T) {
	for expr, want := range map[string]string{
		`^listening on :\d+$`:                 "listening on :",
		`^0*335543 `:                          "335543 ",
		`ready`:                               "ready",
		`(?i)ready`:                           "",
		`ready|started`:                       "",
		`(ready)?x`:                           "x",
		`(?:server )+up`:                      "server ",
		`a{2,}bcd`:                            "bcd",
		`(ab){0,3}c`:                          "c",
		`\x{FFFD}ok`:                          "ok",
		`port \d+ (open|listening) right now`: " right now",
		`.*`:                                  "",
	} {
		m, err := NewLineMatcher(expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Literal(); got != want {
			t.Errorf("Literal of %q = %q, want %q", expr, got, want)
		}
	}
}

// Every line a matcher accepts holds its literal: random expressions from
// a small grammar against random lines.
func TestLineMatcherLiteralIsInEveryMatch(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	atoms := []string{"a", "b", "ab", "ba", "(?i)a", "[ab]", ".", `\x{FFFD}`, "^", "$", `\b`}
	ops := []string{"", "", "*", "+", "?", "{2}", "{1,}", "{0,2}"}
	var gen func(depth int) string
	gen = func(depth int) string {
		if depth > 2 || rnd.IntN(3) == 0 {
			return atoms[rnd.IntN(len(atoms))]
		}
		var parts []string
		for range 1 + rnd.IntN(3) {
			p := gen(depth + 1)
			switch rnd.IntN(4) {
			case 0:
				p = "(" + p + ")"
			case 1:
				p = "(?:" + p + "|" + gen(depth+1) + ")"
			}
			parts = append(parts, p+ops[rnd.IntN(len(ops))])
		}
		return strings.Join(parts, "")
	}
	checked := 0
	for range 3000 {
		expr := gen(0)
		m, err := NewLineMatcher(expr)
		if err != nil {
			continue
		}
		lit := m.Literal()
		for range 30 {
			b := make([]byte, rnd.IntN(12))
			for i := range b {
				b[i] = "abAB \xff\r"[rnd.IntN(7)]
			}
			line := string(b)
			if m.Match(line) {
				checked++
				if !strings.Contains(line, lit) {
					t.Fatalf("%q matches %q, which does not hold its literal %q", expr, line, lit)
				}
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d matching lines checked", checked)
	}
}
