package config

import (
	"errors"
	"io/fs"
	"os"
	"strings"
)

// LoadEnvFile reads a .env file: KEY=VALUE lines, with
//
//   - blank lines and lines starting with # skipped, and an "export " prefix
//     allowed;
//   - unquoted values trimmed, and cut at " #" (a comment);
//   - 'single-quoted' values taken literally;
//   - "double-quoted" values with \n, \t, \r, \", \\ and \$ escapes;
//   - quoted values may span lines;
//   - in unquoted and double-quoted values, $NAME and docker compose's
//     ${NAME}, ${NAME:-default} and the other forms (expand.go) expand to
//     the variable from an earlier line, else the supervisor's
//     environment, else "" (\$ and $$ are a literal $); nothing expands in
//     single quotes;
//   - no NUL byte, a value of at most maxValueSize bytes once expanded,
//     and at most maxEnvSize bytes in all.
//
// Problems come back together as an ErrorList naming path:line and the
// variable.
func LoadEnvFile(path string) (map[string]string, error) {
	return LoadEnvFiles([]string{path})
}

// LoadEnvFiles reads several .env files in order into one set: a later
// file's variable replaces an earlier one's, and may refer to it. The set
// as a whole is bounded by maxEnvSize.
func LoadEnvFiles(paths []string) (map[string]string, error) {
	b := &envBudget{env: map[string]string{}}
	for _, path := range paths {
		data, err := readFile(path)
		if err != nil {
			return nil, ErrorList{{File: path, Msg: "cannot read: " + errText(err)}}
		}
		if err := parseEnvInto(path, string(data), b, os.LookupEnv); err != nil {
			return nil, err
		}
	}
	return b.env, nil
}

// errText is err's message without the path, which the Error names already.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// parseEnv parses one .env file; outer resolves the variables its values
// refer to that it does not set itself (nil: none).
func parseEnv(file, data string, outer func(string) (string, bool)) (map[string]string, error) {
	b := &envBudget{env: map[string]string{}}
	if err := parseEnvInto(file, data, b, outer); err != nil {
		return nil, err
	}
	return b.env, nil
}

// parseEnvInto parses one .env file into b; its values refer to b's
// variables, else to outer's.
func parseEnvInto(file, data string, b *envBudget, outer func(string) (string, bool)) error {
	if err := checkSize(file, []byte(data)); err != nil {
		return err
	}
	if err := checkLineBounds(file, []byte(data)); err != nil {
		return err
	}
	lookup := func(name string) (string, bool) {
		if v, ok := b.env[name]; ok {
			return v, true
		}
		if outer != nil {
			return outer(name)
		}
		return "", false
	}
	p := &envParser{file: file, b: b, ex: &expander{lookup: lookup, bare: true}, errs: &errorSet{}}
	lines := strings.Split(strings.ReplaceAll(data, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		i = p.line(lines, i)
	}
	return p.errs.err()
}

// envParser is one .env file being parsed.
type envParser struct {
	file string
	b    *envBudget
	ex   *expander
	errs *errorSet
}

func (p *envParser) bad(line int, key, msg string) {
	p.errs.add(&Error{File: p.file, Line: line, Key: key, Msg: msg})
}

// line parses the line lines[i] (with the lines a quoted value goes on
// over) and returns the index of the last line it read.
func (p *envParser) line(lines []string, i int) int {
	lineNo := i + 1
	text := strings.TrimSpace(lines[i])
	if text == "" || strings.HasPrefix(text, "#") {
		return i
	}
	if rest, ok := strings.CutPrefix(text, "export"); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "\t")) {
		text = strings.TrimSpace(rest)
	}
	key, val, ok := strings.Cut(text, "=")
	key = strings.TrimSpace(key)
	if !ok {
		p.bad(lineNo, "", `want KEY=VALUE (no "=" on this line)`)
		return i
	}
	if !envNameRE().MatchString(key) {
		p.bad(lineNo, key, "invalid variable name: use letters, digits and '_', not starting with a digit")
		return i
	}
	val = strings.TrimLeft(val, " \t")
	raw, last, ok := p.rawValue(lines, i, key, val)
	if ok {
		p.assign(lineNo, key, val, raw)
	}
	return last
}

// rawValue is the value val starts on lines[i], as written: unquoted up to
// a " #" comment, or between its quotes; and the index of its last line.
// It sets how the expander reads escapes in it.
func (p *envParser) rawValue(lines []string, i int, key, val string) (raw string, last int, ok bool) {
	if val == "" || val[0] != '"' && val[0] != '\'' {
		raw = val
		if j := strings.Index(val, " #"); j >= 0 {
			raw = val[:j]
		}
		p.ex.esc = unquotedEscapes
		return strings.TrimSpace(raw), i, true
	}
	raw, last, closed, msg := quotedValue(lines, i, val)
	if !closed {
		p.bad(i+1, key, msg) // where it opened
		return "", last, false
	}
	p.ex.esc = quotedEscapes
	if msg != "" {
		p.bad(last+1, key, msg)
		return "", last, false
	}
	return raw, last, true
}

// assign sets key to raw, expanded unless single-quoted.
func (p *envParser) assign(lineNo int, key, val, raw string) {
	if strings.IndexByte(raw, 0) >= 0 {
		p.bad(lineNo, key, "the value contains a NUL byte, which no environment can hold")
		return
	}
	v := raw
	if val != "" && val[0] != '\'' {
		var err error
		if v, err = p.ex.expand(raw); err != nil {
			p.bad(lineNo, key, err.Error())
			return
		}
	}
	if err := p.b.set(key, v); err != nil {
		p.bad(lineNo, key, err.Error())
	}
}

// quotedValue finds the end of the quoted value that starts with val on
// lines[i] and may go on over the following lines: the text between the
// quotes as written (lines joined by "\n"), the index of its last line,
// whether it is closed, and what is wrong with it, if anything. In double
// quotes a backslash escapes the next character, a quote too.
func quotedValue(lines []string, i int, val string) (raw string, last int, closed bool, msg string) {
	q := val[0]
	body := val[1:]
	var b strings.Builder
	for {
		j := 0
		for ; j < len(body) && body[j] != q; j++ {
			if q == '"' && body[j] == '\\' && j+1 < len(body) {
				j++
			}
		}
		if j < len(body) { // the closing quote
			if tail := strings.TrimSpace(body[j+1:]); tail != "" && !strings.HasPrefix(tail, "#") {
				msg = "unexpected text after the closing quote"
			}
			if b.Len() == 0 {
				return body[:j], i, true, msg
			}
			b.WriteString(body[:j])
			return b.String(), i, true, msg
		}
		if i+1 >= len(lines) {
			return "", i, false, "unterminated quoted value"
		}
		b.WriteString(body)
		b.WriteByte('\n')
		i++
		body = lines[i]
	}
}
