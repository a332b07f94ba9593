package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Error is one problem in a config file. It prints as
//
//	file:line: key: message
//
// Line is 0 when the problem has no line of its own (a missing file, a
// Procfile formation naming no process type); Key is empty for syntax errors
// that belong to no key. Msg is never empty.
type Error struct {
	File string
	Line int
	Key  string // dotted TOML path, e.g. program.web.restart or program.web.depends_on[1]
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found in one file, in line order. Parse and Load
// return it (as an error) whenever the file is refused; it is never empty.
type ErrorList []*Error

// Error prints one problem per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find a single *Error inside the list.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// errorSet collects problems, drops duplicates (a bad value in [defaults] is
// seen once per program but reported once) and sorts them by position.
type errorSet struct {
	seen map[Error]bool
	list ErrorList
}

func (s *errorSet) add(e *Error) {
	e.Key, e.Msg = oneLine(e.Key), oneLine(e.Msg)
	if s.seen == nil {
		s.seen = make(map[Error]bool)
	}
	if s.seen[*e] {
		return
	}
	s.seen[*e] = true
	s.list = append(s.list, e)
}

// oneLine escapes line breaks and other control characters (a value
// quoted from the file, a toml message), so one problem prints as one line.
func oneLine(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// err returns nil when nothing was added, never a typed nil.
func (s *errorSet) err() error {
	if len(s.list) == 0 {
		return nil
	}
	slices.SortStableFunc(s.list, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), strings.Compare(a.Key, b.Key), strings.Compare(a.Msg, b.Msg))
	})
	if n := len(s.list) - maxErrors; n > 0 {
		// A file of thousands of mistakes is one mistake repeated: the
		// first ones say what it is, and the reply stays small.
		last := s.list[maxErrors-1]
		s.list = append(s.list[:maxErrors:maxErrors], &Error{File: last.File, Line: last.Line, Msg: fmt.Sprintf("and %d more problems", n)})
	}
	return s.list
}

// maxErrors bounds the problems one ErrorList reports.
const maxErrors = 100
