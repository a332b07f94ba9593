package notify

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// LineMatcher is ready_log_line: the program is ready once a line of its
// output matches.
type LineMatcher struct {
	re  *regexp.Regexp
	lit string
}

// NewLineMatcher compiles expr (Go regexp syntax, RE2).
func NewLineMatcher(expr string) (*LineMatcher, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("ready_log_line: %w", err)
	}
	m := &LineMatcher{re: re}
	if tree, err := syntax.Parse(expr, syntax.Perl); err == nil { // as regexp.Compile parses
		m.lit = requiredLiteral(tree)
	}
	return m, nil
}

// Match reports whether line, without its line ending, matches. It is
// safe for concurrent use (stdout and stderr pumps).
func (m *LineMatcher) Match(line string) bool {
	return m.re.MatchString(strings.TrimRight(line, "\r\n"))
}

// Literal returns a string that every line Match accepts contains, or ""
// when the expression has none that can be told: a chunk of output can
// be searched for it at once, and the lines without it skipped. For
// `^listening on :\d+$` it is "listening on :".
func (m *LineMatcher) Literal() string { return m.lit }

// requiredLiteral returns the longest literal that every match of re
// contains, or "". It looks only where that is plain: a literal, and what
// must occur at least once (a group, x+, x{n,} with n ≥ 1, the parts of a
// sequence); an alternation, an optional part or a case-insensitive
// literal gives "". U+FFFD is left out of a literal: the regexp matches
// that rune against invalid UTF-8, which the bytes do not spell.
func requiredLiteral(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return ""
		}
		best := ""
		for _, s := range strings.Split(string(re.Rune), string(utf8.RuneError)) {
			if len(s) > len(best) {
				best = s
			}
		}
		return best
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best := ""
		for _, sub := range re.Sub {
			if s := requiredLiteral(sub); len(s) > len(best) {
				best = s
			}
		}
		return best
	}
	return ""
}

// String returns the expression.
func (m *LineMatcher) String() string { return m.re.String() }
