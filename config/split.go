package config

import (
	"errors"
	"fmt"
	"strings"
)

// SplitCommand splits a command line into words the way a POSIX shell
// would, without running one and without expanding anything:
//
//   - blanks (space, tab, newline) separate words;
//   - '…' keeps everything literally;
//   - "…" keeps everything except that \ escapes $ ` " \ and newline;
//   - \ outside quotes escapes the next character, and \ newline joins lines;
//   - an empty pair of quotes makes an empty word.
//
// Because nothing else would happen as the user meant, an unquoted shell
// operator or expansion (| & ; < > ( ) $ `) is an error that says to use a
// shell, as is a word starting with # or an unbalanced quote.
func SplitCommand(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word (possibly an empty quoted one)
	)
	flush := func() {
		if in {
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			flush()
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unbalanced ' (single quote)")
			}
			cur.WriteString(s[i+1 : i+1+end])
			in = true
			i += end + 1
		case '"':
			in = true
			var err error
			if i, err = doubleQuoted(s, i+1, &cur); err != nil {
				return nil, err
			}
		case '\\':
			if i+1 >= len(s) {
				return nil, errors.New(`ends with a lone \`)
			}
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
				in = true
			}
		case '|', '&', ';', '<', '>', '(', ')', '$', '`':
			return nil, needsShell(s, string(c))
		case '#':
			if !in {
				return nil, needsShell(s, "#")
			}
			cur.WriteByte(c)
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	return words, nil
}

// doubleQuoted writes the double-quoted text from s[i] to cur, and returns
// the index of its closing quote: a backslash escapes $ ` " \ and newline
// (which it removes), and stays as written before anything else.
func doubleQuoted(s string, i int, cur *strings.Builder) (int, error) {
	for ; i < len(s) && s[i] != '"'; i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				cur.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		cur.WriteByte(s[i])
	}
	if i >= len(s) {
		return i, errors.New(`unbalanced " (double quote)`)
	}
	return i, nil
}

func needsShell(s, what string) error {
	return fmt.Errorf("unquoted %q needs a shell, and commands run without one: quote it, or write command = [\"sh\", \"-c\", %q]", what, s)
}
