package config

import (
	"errors"
	"fmt"
	"strings"
)

// The interpolation of .env values and TOML env values, after docker
// compose's rules:
//
//	$$             a literal $
//	${NAME}        NAME's value, empty when unset
//	${NAME:-word}  word when NAME is unset or empty, else its value
//	${NAME-word}   word when NAME is unset
//	${NAME:+word}  word when NAME is set and not empty, else empty
//	${NAME+word}   word when NAME is set
//	${NAME:?word}  an error saying word when NAME is unset or empty
//	${NAME?word}   an error saying word when NAME is unset
//	$NAME          NAME's value, in a .env file only
//
// word is expanded in turn, so defaults nest (${A:-${B:-c}}), at most
// maxRefDepth deep. Only the word that is used is expanded; the other is
// read to find its end.
//
// The result is built in one buffer that refuses to grow past its limit:
// every write is checked before it is made, so a file whose lines double
// the one before (A1=${A0}${A0}, A2=${A1}${A1}, …) costs at most the limit,
// not the gigabytes it would expand to.

// escapes says which backslash escapes a text takes.
type escapes int

const (
	// noEscapes: TOML strings, whose escapes the decoder has read.
	noEscapes escapes = iota
	// unquotedEscapes: an unquoted .env value, where \$ is a $ and any
	// other backslash stays.
	unquotedEscapes
	// quotedEscapes: a double-quoted .env value: \n \t \r \" \\ \$, any
	// other backslash stays.
	quotedEscapes
)

// expander expands one value.
type expander struct {
	lookup func(string) (string, bool)
	esc    escapes
	// bare makes $NAME a reference; without it (TOML) only ${…} is one,
	// so "pa$word" needs no escaping.
	bare bool
	// strict makes a ${ that starts no reference an error (TOML); else it
	// stays as written (.env, as the dotenv libraries leave it).
	strict bool
	out    []byte
	err    error
}

// errValueTooLong is the error of a value that expands past maxValueSize.
var errValueTooLong = fmt.Errorf("expands to longer than %d bytes", maxValueSize)

// expand returns s with its references replaced.
func (e *expander) expand(s string) (string, error) {
	if !strings.ContainsAny(s, `$\`) {
		return s, nil
	}
	e.out, e.err = e.out[:0], nil
	e.text(s, 0, 0, true)
	if e.err != nil {
		return "", e.err
	}
	return string(e.out), nil
}

// write appends v to the output unless that would pass maxValueSize. The
// buffer grows by doubling but never past the bound.
func (e *expander) write(v string) {
	if e.err != nil {
		return
	}
	need := len(e.out) + len(v)
	if need > maxValueSize {
		e.err = errValueTooLong
		return
	}
	if need > cap(e.out) {
		grown := make([]byte, len(e.out), min(max(2*cap(e.out), need, 64), maxValueSize))
		copy(grown, e.out)
		e.out = grown
	}
	e.out = append(e.out, v...)
}

// text expands s from i: to its end at depth 0, else to the '}' that
// closes the word it is in. It returns the index after what it read and
// whether a '}' closed it. With write false it only finds the end.
func (e *expander) text(s string, i, depth int, write bool) (next int, closed bool) {
	emit := func(v string) {
		if write {
			e.write(v)
		}
	}
	for i < len(s) && e.err == nil {
		c := s[i]
		switch {
		case c == '}' && depth > 0:
			return i + 1, true
		case c == '\\' && e.escaped(s, i):
			emit(unescape(s[i+1], e.esc))
			i += 2
		case c == '$':
			n, st := e.reference(s, i, depth, write)
			if st == refOpen {
				// No '}' closes it before the end: the rest is text (its
				// own ${ cannot close either), and a word it sits in is
				// unclosed too.
				if depth == 0 {
					emit(s[i:])
				}
				return len(s), false
			}
			if st == refBad {
				emit("$")
				n = i + 1
			}
			i = n
		default:
			j := e.plainEnd(s, i+1)
			emit(s[i:j])
			i = j
		}
	}
	return i, false
}

// escaped reports whether the backslash at s[i] escapes the next byte.
func (e *expander) escaped(s string, i int) bool {
	return i+1 < len(s) && (e.esc == quotedEscapes || e.esc == unquotedEscapes && s[i+1] == '$')
}

// plainEnd is the end of the plain text from s[j]: the next '$', '}' or
// (where escapes are read) backslash.
func (e *expander) plainEnd(s string, j int) int {
	for j < len(s) && s[j] != '$' && (s[j] != '\\' || e.esc == noEscapes) && s[j] != '}' {
		j++
	}
	return j
}

// unescape is what a backslash and c stand for.
func unescape(c byte, esc escapes) string {
	if esc == quotedEscapes {
		switch c {
		case 'n':
			return "\n"
		case 't':
			return "\t"
		case 'r':
			return "\r"
		case '"', '\\', '$':
			return string(c)
		}
	} else if c == '$' {
		return "$"
	}
	return "\\" + string(c) // unknown: stays as written, as in a shell
}

type refStatus int

const (
	refOK   refStatus = iota
	refBad            // not a reference: the $ is text
	refOpen           // a ${ that nothing closes
)

// reference reads the reference at s[i] (a '$') and writes its value. It
// returns the index after it.
func (e *expander) reference(s string, i, depth int, write bool) (int, refStatus) {
	if i+1 >= len(s) {
		return 0, refBad
	}
	switch c := s[i+1]; {
	case c == '$':
		if write {
			e.write("$")
		}
		return i + 2, refOK
	case c == '{':
		return e.braced(s, i, depth, write)
	case e.bare && nameStart(c):
		j := i + 2
		for j < len(s) && nameByte(s[j]) {
			j++
		}
		if write {
			v, _ := e.lookup(s[i+1 : j])
			e.write(v)
		}
		return j, refOK
	}
	return 0, refBad
}

// braced reads ${NAME…} at s[i].
func (e *expander) braced(s string, i, depth int, write bool) (int, refStatus) {
	name, j, st := braceName(s, i)
	if st != refOK {
		return e.bad(s, i, st)
	}
	if s[j] == '}' {
		if write {
			v, _ := e.lookup(name)
			e.write(v)
		}
		return j + 1, refOK
	}
	colon := s[j] == ':'
	if colon {
		j++
	}
	if j >= len(s) {
		return e.bad(s, i, refOpen)
	}
	if op := s[j]; op != '-' && op != '+' && op != '?' {
		return e.bad(s, i, refBad)
	}
	if depth+1 > maxRefDepth {
		e.err = fmt.Errorf("references nested more than %d deep", maxRefDepth)
		return len(s), refOK
	}
	next, closed := e.operand(s, j, depth, write, name, colon)
	if e.err != nil {
		return len(s), refOK
	}
	if !closed {
		return e.bad(s, i, refOpen)
	}
	return next, refOK
}

// braceName reads the NAME of ${NAME…} at s[i]; j is the index after it.
func braceName(s string, i int) (name string, j int, st refStatus) {
	j = i + 2
	for j < len(s) && nameByte(s[j]) {
		j++
	}
	name = s[i+2 : j]
	switch {
	case j >= len(s):
		return name, j, refOpen
	case name == "" || !nameStart(name[0]):
		return name, j, refBad
	}
	return name, j, refOK
}

// operand expands ${NAME op word} from its operator at s[j] ('-', '+' or
// '?'): the word, NAME's value, or for '?' an error when NAME is missing.
func (e *expander) operand(s string, j, depth int, write bool, name string, colon bool) (next int, closed bool) {
	op := s[j]
	v, set := e.lookup(name)
	if !write {
		v, set = "", false // the answer is not needed, only the word's end
	}
	present := set && (v != "" || !colon)
	if op == '+' {
		return e.text(s, j+1, depth+1, write && present)
	}
	// '-' and '?': the value when present, else the word.
	if present {
		e.write(v)
	}
	mark := len(e.out)
	next, closed = e.text(s, j+1, depth+1, write && !present)
	if op == '?' && write && !present && closed && e.err == nil {
		e.err = requiredError(name, string(e.out[mark:]), colon)
	}
	return next, closed
}

// requiredError is the error of ${NAME:?msg} or ${NAME?msg}.
func requiredError(name, msg string, colon bool) error {
	if msg == "" {
		msg = "required variable is unset"
		if colon {
			msg = "required variable is unset or empty"
		}
	}
	const most = 200
	if len(msg) > most {
		msg = msg[:most] + "…"
	}
	return errors.New(name + ": " + msg)
}

// bad is what a ${ that starts no reference gives: an error when strict,
// else st (the $ stays as written).
func (e *expander) bad(s string, i int, st refStatus) (int, refStatus) {
	if !e.strict {
		return 0, st
	}
	if st == refOpen {
		e.err = fmt.Errorf("unterminated \"${\" in %q (write $$ for a literal $)", clip(s))
	} else {
		e.err = fmt.Errorf("invalid variable reference %q: want ${NAME}, ${NAME:-default} or another form of docker compose's (write $$ for a literal $)", clip(s[i:]))
	}
	return len(s), refOK
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

func nameStart(c byte) bool { return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

func nameByte(c byte) bool { return nameStart(c) || c >= '0' && c <= '9' }

// envCost is what one variable adds to an environment, as the kernel
// counts it against ARG_MAX: KEY=VALUE, its NUL and a pointer.
func envCost(k, v string) int { return len(k) + len(v) + 2 + 8 }

// errEnvTooLarge is the error of a variable that takes an environment past
// maxEnvSize.
var errEnvTooLarge = fmt.Errorf("makes the environment larger than %d bytes (each variable counted as KEY=VALUE, a NUL and a pointer, as the kernel counts it)", maxEnvSize)

// errConfigEnvTooLarge is the error of a variable that takes the
// environments of all programs together past maxConfigEnvSize.
var errConfigEnvTooLarge = fmt.Errorf("makes the environments of all programs (times their instances) larger than %d bytes together", maxConfigEnvSize)

// envBudget keeps an environment within maxEnvSize as variables are set.
type envBudget struct {
	env  map[string]string
	size int
}

// set sets k to v, or returns errEnvTooLarge and leaves env as it was.
func (b *envBudget) set(k, v string) error {
	size := b.size + envCost(k, v)
	if old, ok := b.env[k]; ok {
		size -= envCost(k, old)
	}
	if size > maxEnvSize {
		return errEnvTooLarge
	}
	b.env[k], b.size = v, size
	return nil
}
