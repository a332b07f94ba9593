package notify

import (
	"fmt"
	"regexp"
	"strings"
)

// LineMatcher is ready_log_line: the program is ready once a line of its
// output matches.
type LineMatcher struct {
	re *regexp.Regexp
}

// NewLineMatcher compiles expr (Go regexp syntax, RE2).
func NewLineMatcher(expr string) (*LineMatcher, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("ready_log_line: %w", err)
	}
	return &LineMatcher{re: re}, nil
}

// Match reports whether line, without its line ending, matches. It is
// safe for concurrent use (stdout and stderr pumps).
func (m *LineMatcher) Match(line string) bool {
	return m.re.MatchString(strings.TrimRight(line, "\r\n"))
}

// String returns the expression.
func (m *LineMatcher) String() string { return m.re.String() }
