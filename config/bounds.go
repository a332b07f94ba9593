package config

import "fmt"

// Bounds on what the loader accepts before it hands a file to a decoder.
// The TOML decoder recurses once per level of nested arrays and inline
// tables and allocates per table header, so a small hostile file could
// otherwise overflow the stack (a fatal error no recover catches: PID 1
// dies) or grow the heap by gigabytes. Real configs are far inside them: a
// thousand programs with sandboxes and probes is about 300 KiB, 4,000
// headers and 3 levels deep.
const (
	// maxFileSize bounds a config, Procfile or .env file.
	maxFileSize = 1 << 20
	// maxNesting bounds how deep arrays and inline tables (and the
	// brackets of a table header) may nest.
	maxNesting = 32
	// maxTables bounds the [table] and [[array]] headers of a TOML file.
	maxTables = 20000
	// maxLines and maxLineLen bound a Procfile or .env file.
	maxLines   = 10000
	maxLineLen = 64 << 10
)

// checkTOMLBounds scans data as TOML's lexer would (strings, multi-line
// strings, comments) and refuses nesting deeper than maxNesting or more
// than maxTables headers, naming the line where the bound was crossed. It
// reads each byte once and keeps no state but a few counters, so any
// input is cheap to refuse.
func checkTOMLBounds(file string, data []byte) error {
	depth, tables, line := 0, 0, 1
	lineStart := true // only blanks seen on this line so far
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch c {
		case '\n':
			line++
			lineStart = true
			continue
		case ' ', '\t', '\r':
			continue
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
			continue
		case '"', '\'':
			var n int
			i, n = skipString(data, i)
			line += n
		case '[', '{':
			if c == '[' && lineStart && depth == 0 {
				tables++
				if tables > maxTables {
					return ErrorList{{File: file, Line: line, Msg: fmt.Sprintf("more than %d table headers", maxTables)}}
				}
			}
			depth++
			if depth > maxNesting {
				return ErrorList{{File: file, Line: line, Msg: fmt.Sprintf("arrays and inline tables nested more than %d deep", maxNesting)}}
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
		lineStart = false
	}
	return nil
}

// skipString returns the index of the last byte of the string that starts
// at data[i] (a quote) and the number of newlines inside it. An
// unterminated string ends where TOML would report it (the line's end, or
// the file's end for a multi-line one); the decoder then says what is wrong.
func skipString(data []byte, i int) (end, newlines int) {
	q := data[i]
	multi := i+2 < len(data) && data[i+1] == q && data[i+2] == q
	if multi {
		i += 3
		for ; i < len(data); i++ {
			switch {
			case data[i] == '\n':
				newlines++
			case data[i] == '\\' && q == '"':
				if i+1 < len(data) && data[i+1] == '\n' {
					newlines++
				}
				i++
			case data[i] == q && i+2 < len(data) && data[i+1] == q && data[i+2] == q:
				// Up to two more quotes may belong to the string ("""a"""").
				i += 2
				for k := 0; k < 2 && i+1 < len(data) && data[i+1] == q; k++ {
					i++
				}
				return i, newlines
			}
		}
		return len(data) - 1, newlines
	}
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\n':
			return i - 1, 0
		case '\\':
			if q == '"' && i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case q:
			return i, 0
		}
	}
	return len(data) - 1, 0
}

// checkLineBounds refuses a Procfile or .env file with more than maxLines
// lines or a line longer than maxLineLen, naming the first offending line.
func checkLineBounds(file string, data []byte) error {
	line, start := 1, 0
	for i, c := range data {
		if c != '\n' {
			continue
		}
		if i-start > maxLineLen {
			return ErrorList{{File: file, Line: line, Msg: fmt.Sprintf("line longer than %d bytes", maxLineLen)}}
		}
		line++
		start = i + 1
	}
	if len(data)-start > maxLineLen {
		return ErrorList{{File: file, Line: line, Msg: fmt.Sprintf("line longer than %d bytes", maxLineLen)}}
	}
	if start == len(data) {
		line-- // the file ends with a newline: no line after it
	}
	if line > maxLines {
		return ErrorList{{File: file, Line: maxLines + 1, Msg: fmt.Sprintf("more than %d lines", maxLines)}}
	}
	return nil
}

// checkSize refuses data larger than maxFileSize, for the entry points that
// take bytes rather than a path (a reload hands them over already read).
func checkSize(file string, data []byte) error {
	if len(data) > maxFileSize {
		return ErrorList{{File: file, Msg: fmt.Sprintf("larger than %d bytes", maxFileSize)}}
	}
	return nil
}
