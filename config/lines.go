package config

import (
	"strconv"
	"strings"
)

// lineIndex maps every key of a TOML document to the line that defines it.
//
// BurntSushi/toml v1.6 records key positions but keeps them unexported
// (MetaData has no Position method), so we find them ourselves with a small
// scanner. It runs only on documents toml.Decode accepted, so it can be
// forgiving, but it must never loop or panic on any input.
type lineIndex map[string]int

// lineKey is the map key of a path: NUL cannot occur in a TOML key.
func lineKey(path []string) string { return strings.Join(path, "\x00") }

// line returns the line of path, else of its nearest ancestor that has one,
// else 0. Array element segments ("[2]") are skipped.
func (ix lineIndex) line(path []string) int {
	p := make([]string, 0, len(path))
	for _, s := range path {
		if !strings.HasPrefix(s, "[") {
			p = append(p, s)
		}
	}
	for n := len(p); n > 0; n-- {
		if l, ok := ix[lineKey(p[:n])]; ok {
			return l
		}
	}
	return 0
}

// set records path and its implicit parent tables ([a.b.c] defines a and
// a.b too) at line, unless an earlier line defined them: the first
// definition wins, and [[array]] tables repeat.
func (ix lineIndex) set(path []string, line int) {
	for n := 1; n <= len(path); n++ {
		k := lineKey(path[:n])
		if _, ok := ix[k]; !ok {
			ix[k] = line
		}
	}
}

func indexLines(doc string) lineIndex {
	s := &scanner{src: doc, line: 1, ix: lineIndex{}}
	s.document()
	return s.ix
}

type scanner struct {
	src  string
	pos  int
	line int
	ix   lineIndex
}

func (s *scanner) eof() bool { return s.pos >= len(s.src) }

func (s *scanner) peek() byte {
	if s.eof() {
		return 0
	}
	return s.src[s.pos]
}

func (s *scanner) next() {
	if !s.eof() {
		if s.src[s.pos] == '\n' {
			s.line++
		}
		s.pos++
	}
}

// skipSpace skips blanks and comments, and newlines too when nl is set.
func (s *scanner) skipSpace(nl bool) {
	for !s.eof() {
		switch c := s.peek(); {
		case c == ' ' || c == '\t' || c == '\r':
			s.next()
		case c == '\n' && nl:
			s.next()
		case c == '#':
			for !s.eof() && s.peek() != '\n' {
				s.next()
			}
		default:
			return
		}
	}
}

func (s *scanner) skipLine() {
	for !s.eof() && s.peek() != '\n' {
		s.next()
	}
}

func (s *scanner) document() {
	var table []string
	for {
		s.skipSpace(true)
		if s.eof() {
			return
		}
		start := s.pos
		if s.peek() == '[' {
			s.next()
			if s.peek() == '[' {
				s.next()
			}
			line := s.line
			path := s.key()
			s.skipSpace(false)
			for s.peek() == ']' {
				s.next()
			}
			table = path
			if len(path) > 0 {
				s.ix.set(path, line)
			}
			s.skipLine()
			continue
		}
		s.keyValue(table)
		if s.pos == start { // not a key: never loop on garbage
			s.skipLine()
		}
	}
}

// keyValue reads `a.b = value` under table, recording the key's line.
func (s *scanner) keyValue(table []string) {
	line := s.line
	k := s.key()
	if len(k) == 0 {
		return
	}
	path := append(append([]string(nil), table...), k...)
	s.ix.set(path, line)
	s.skipSpace(false)
	if s.peek() != '=' {
		return
	}
	s.next()
	s.skipSpace(false)
	s.value(path)
}

// key reads a dotted key and stops before what follows it.
func (s *scanner) key() []string {
	var path []string
	for {
		s.skipSpace(false)
		var seg string
		switch c := s.peek(); {
		case c == '"':
			seg = s.basicString()
		case c == '\'':
			seg = s.literalString()
		case isBare(c):
			start := s.pos
			for !s.eof() && isBare(s.peek()) {
				s.next()
			}
			seg = s.src[start:s.pos]
		default:
			return path
		}
		path = append(path, seg)
		s.skipSpace(false)
		if s.peek() != '.' {
			return path
		}
		s.next()
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value skips one value; inline tables record their keys under path.
func (s *scanner) value(path []string) {
	switch c := s.peek(); {
	case c == '"':
		if strings.HasPrefix(s.src[s.pos:], `"""`) {
			s.multiline('"')
		} else {
			s.basicString()
		}
	case c == '\'':
		if strings.HasPrefix(s.src[s.pos:], `'''`) {
			s.multiline('\'')
		} else {
			s.literalString()
		}
	case c == '[':
		s.next()
		for !s.eof() {
			s.skipSpace(true)
			switch s.peek() {
			case ']':
				s.next()
				return
			case ',':
				s.next()
				continue
			}
			start := s.pos
			s.value(path) // keys of inline tables in arrays have no index in MetaData.Keys either
			if s.pos == start {
				s.next()
			}
		}
	case c == '{':
		s.next()
		for !s.eof() {
			s.skipSpace(true)
			switch s.peek() {
			case '}':
				s.next()
				return
			case ',':
				s.next()
				continue
			}
			start := s.pos
			s.keyValue(path)
			if s.pos == start {
				s.next()
			}
		}
	default: // number, bool, date: up to a delimiter
		for !s.eof() {
			switch s.peek() {
			case ',', ']', '}', '\n', '#':
				return
			}
			s.next()
		}
	}
}

// basicString reads "…" and returns its value (escapes decoded as TOML
// does, so quoted keys match the keys toml.Decode reports).
func (s *scanner) basicString() string {
	s.next() // opening quote
	var b strings.Builder
	for !s.eof() {
		c := s.peek()
		switch c {
		case '"':
			s.next()
			return b.String()
		case '\n':
			return b.String()
		case '\\':
			s.next()
			e := s.peek()
			s.next()
			switch e {
			case 'b':
				b.WriteByte('\b')
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'f':
				b.WriteByte('\f')
			case 'r':
				b.WriteByte('\r')
			case 'e':
				b.WriteByte(0x1b)
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if s.pos+n <= len(s.src) {
					if r, err := strconv.ParseUint(s.src[s.pos:s.pos+n], 16, 32); err == nil {
						b.WriteRune(rune(r))
						s.pos += n
					}
				}
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
			s.next()
		}
	}
	return b.String()
}

func (s *scanner) literalString() string {
	s.next()
	start := s.pos
	for !s.eof() && s.peek() != '\'' && s.peek() != '\n' {
		s.next()
	}
	v := s.src[start:s.pos]
	if s.peek() == '\'' {
		s.next()
	}
	return v
}

// multiline skips a multi-line string, basic (three double quotes) or
// literal (three single quotes). Up to two quotes may
// precede the closing delimiter (`""""` ends with one quote of content).
func (s *scanner) multiline(q byte) {
	s.pos += 3
	for !s.eof() {
		c := s.peek()
		if c == '\\' && q == '"' {
			s.next()
			s.next()
			continue
		}
		if c == q {
			n := 0
			for !s.eof() && s.peek() == q {
				s.next()
				n++
			}
			if n >= 3 {
				return
			}
			continue
		}
		s.next()
	}
}
