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
	// maxKeyParts bounds the parts of a key's path: a table header's,
	// its dotted keys' and those of the inline tables around them.
	maxKeyParts = 8
	// maxValues bounds the key/value pairs, the parts of dotted keys and
	// headers past the first, the inline tables and the array elements of
	// a file.
	maxValues = 50000
	// maxPrograms bounds the programs of a file, and maxDefaultsApplied
	// the values of [defaults] times the programs they apply to (each
	// program decodes them anew).
	maxPrograms        = 10000
	maxDefaultsApplied = 200000
	// maxValueSize and maxEnvSize bound a variable once expanded and a
	// program's whole environment (each variable as KEY=VALUE, its NUL
	// and a pointer, as the kernel counts it).
	maxValueSize = 128 << 10
	maxEnvSize   = 1 << 20
	// maxConfigEnvSize and maxConfigEnvVars bound the environments of all
	// programs together (each instance counted in the size): a variable
	// of [defaults] is one for each program.
	maxConfigEnvSize = 16 << 20
	maxConfigEnvVars = 100000
	// maxRefDepth bounds how deep ${A:-${B:-…}} nests.
	maxRefDepth = 16
)

// checkTOMLBounds scans data as TOML's lexer would (strings, multi-line
// strings, comments) and refuses, naming the line where the bound was
// crossed: nesting deeper than maxNesting, more than maxTables headers,
// more than maxValues keys and array elements, or a key path of more than
// maxKeyParts parts (a header's parts, and a key's with those of the
// inline tables around it). The decoder copies a key's whole path for each
// of its parts, so a key of thousands of parts costs it gigabytes. The
// scan reads each byte once and keeps no state but counters and a stack of
// at most maxNesting entries, so any input is cheap to refuse.
func checkTOMLBounds(file string, data []byte) error {
	b := boundsScan{file: file, line: 1}
	return b.scan(data)
}

// boundsScan is the state of checkTOMLBounds.
type boundsScan struct {
	file           string
	line, depth    int
	tables, values int
	header, inKey  bool // reading a table header; reading a key
	parts          int  // parts of the header or key being read
	table          int  // parts of the current table's header
	pending        int  // parts of the key whose value comes next
	open           int  // parts of the keys of the open inline tables
	kinds          [maxNesting]byte
	keyParts       [maxNesting]int
}

func (b *boundsScan) fail(format string, args ...any) error {
	return ErrorList{{File: b.file, Line: b.line, Msg: fmt.Sprintf(format, args...)}}
}

// path is the number of parts of the key being read, with its context.
func (b *boundsScan) path() int {
	if b.header {
		return b.parts
	}
	return b.table + b.open + b.parts
}

func (b *boundsScan) scan(data []byte) error {
	lineStart := true // only blanks seen on this line so far
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch c {
		case '\n':
			b.line++
			lineStart = true
			continue
		case ' ', '\t', '\r':
			continue
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
			continue
		}
		if lineStart && b.depth == 0 {
			if err := b.startLine(c); err != nil {
				return err
			}
		}
		lineStart = false
		var err error
		switch c {
		case '"', '\'':
			var n int
			i, n = skipString(data, i)
			b.line += n
			b.pending = 0
		case '.':
			err = b.dot()
		case '=', ',':
			err = b.separator(c)
		case '[', '{':
			err = b.openNested(c)
		case ']', '}':
			b.closeNested()
		default:
			b.pending = 0
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// startLine reads the first byte of a line at the top level: a header or
// a key/value.
func (b *boundsScan) startLine(c byte) error {
	b.parts = 1
	b.header, b.inKey = c == '[', c != '['
	if b.header {
		b.tables++
		if b.tables > maxTables {
			return b.fail("more than %d table headers", maxTables)
		}
	}
	return nil
}

// countValue counts one key, key part, array element or inline table.
func (b *boundsScan) countValue() error {
	if b.values++; b.values > maxValues {
		return b.fail("more than %d keys, key parts and array elements", maxValues)
	}
	return nil
}

// dot is a '.' outside strings: in a key or header, one more part.
func (b *boundsScan) dot() error {
	if !b.header && !b.inKey {
		return nil
	}
	// Each part costs the decoder a table: it counts as a value.
	if err := b.countValue(); err != nil {
		return err
	}
	b.parts++
	if b.path() > maxKeyParts {
		return b.fail("a key path of more than %d parts (a table header's, or a key's with its table and inline tables)", maxKeyParts)
	}
	return nil
}

// separator is '=' or ',': a key's end, or the next element.
func (b *boundsScan) separator(c byte) error {
	if err := b.countValue(); err != nil {
		return err
	}
	b.pending = 0
	if c == '=' && b.inKey {
		b.inKey, b.pending = false, b.parts
	}
	if c == ',' && b.depth > 0 && b.kinds[b.depth-1] == '{' {
		b.inKey, b.parts = true, 1
	}
	return nil
}

// openNested is '[' or '{': an array, an inline table or a header.
func (b *boundsScan) openNested(c byte) error {
	if c == '{' { // an inline table costs the decoder a map
		if err := b.countValue(); err != nil {
			return err
		}
	}
	if b.depth == maxNesting {
		return b.fail("arrays and inline tables nested more than %d deep", maxNesting)
	}
	b.kinds[b.depth], b.keyParts[b.depth] = c, b.pending
	b.open += b.pending
	b.depth++
	b.pending = 0
	if c == '{' {
		b.inKey, b.parts = true, 1
	}
	return nil
}

// closeNested is ']' or '}'.
func (b *boundsScan) closeNested() {
	if b.depth > 0 {
		b.depth--
		b.open -= b.keyParts[b.depth]
	}
	if b.header && b.depth == 0 {
		b.header, b.table = false, b.parts
	}
	b.pending = 0
}

// skipString returns the index of the last byte of the string that starts
// at data[i] (a quote) and the number of newlines inside it. An
// unterminated string ends where TOML would report it (the line's end, or
// the file's end for a multi-line one); the decoder then says what is wrong.
func skipString(data []byte, i int) (end, newlines int) {
	q := data[i]
	if i+2 < len(data) && data[i+1] == q && data[i+2] == q {
		return skipMultiString(data, i+3, q)
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

// skipMultiString is skipString for a multi-line string whose body starts
// at data[i].
func skipMultiString(data []byte, i int, q byte) (end, newlines int) {
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
