package export

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// obj is a YAML mapping that keeps its keys in the order written, as
// kubectl's output does; values are string, int, int64, bool, obj or
// []any. A small emitter is enough for what the exporters write, and it
// keeps a YAML library out of the binary.
type obj []kv

type kv struct {
	k string
	v any
}

// set appends k: v, skipping empty values, so callers can set optional
// fields unconditionally.
func (o *obj) set(k string, v any) {
	switch x := v.(type) {
	case nil:
		return
	case string:
		if x == "" {
			return
		}
	case obj:
		if len(x) == 0 {
			return
		}
	case []any:
		if len(x) == 0 {
			return
		}
	}
	*o = append(*o, kv{k, v})
}

// yamlDoc writes one document.
func yamlDoc(b *strings.Builder, o obj) {
	writeMap(b, o, 0)
}

func writeMap(b *strings.Builder, o obj, indent int) {
	for _, e := range o {
		pad(b, indent)
		b.WriteString(e.k)
		b.WriteByte(':')
		writeValue(b, e.v, indent)
	}
}

func writeValue(b *strings.Builder, v any, indent int) {
	switch x := v.(type) {
	case obj:
		b.WriteByte('\n')
		writeMap(b, x, indent+2)
	case []any:
		b.WriteByte('\n')
		for _, item := range x {
			pad(b, indent)
			b.WriteString("- ")
			if m, ok := item.(obj); ok && len(m) > 0 {
				// The first key on the dash's line, the rest under it.
				b.WriteString(m[0].k)
				b.WriteByte(':')
				writeValue(b, m[0].v, indent+2)
				writeMap(b, m[1:], indent+2)
				continue
			}
			writeScalar(b, item)
			b.WriteByte('\n')
		}
	default:
		b.WriteByte(' ')
		writeScalar(b, v)
		b.WriteByte('\n')
	}
}

// writeScalar writes strings double-quoted (YAML's double-quoted style
// reads JSON's escapes), so no value is taken for a number, a boolean or
// syntax.
func writeScalar(b *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		b.WriteString(strconv.Quote(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	default:
		b.WriteString(`""`)
	}
}

// notUTF8 finds a string in v that is not UTF-8: the emitter's quoting
// would write its bytes as \xNN, which YAML reads as characters.
func notUTF8(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, !utf8.ValidString(x)
	case obj:
		for _, e := range x {
			if s, bad := notUTF8(e.v); bad {
				return s, true
			}
		}
	case []any:
		for _, e := range x {
			if s, bad := notUTF8(e); bad {
				return s, true
			}
		}
	}
	return "", false
}

func pad(b *strings.Builder, n int) {
	for range n {
		b.WriteByte(' ')
	}
}
