package metrics

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// ContentType is the Prometheus text exposition format's.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// encoder appends the text exposition format to b. Every family is
// written whole (HELP, TYPE, then its samples), as the format requires.
type encoder struct {
	b []byte
}

func (e *encoder) family(name, typ, help string) {
	e.b = append(e.b, "# HELP "...)
	e.b = append(e.b, name...)
	e.b = append(e.b, ' ')
	e.b = appendEscaped(e.b, help, false)
	e.b = append(e.b, "\n# TYPE "...)
	e.b = append(e.b, name...)
	e.b = append(e.b, ' ')
	e.b = append(e.b, typ...)
	e.b = append(e.b, '\n')
}

// sample writes name{k="v",…} v; labels are name, value pairs.
func (e *encoder) sample(name string, v float64, labels ...string) {
	e.b = append(e.b, name...)
	if len(labels) > 0 {
		e.b = append(e.b, '{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = append(e.b, labels[i]...)
			e.b = append(e.b, `="`...)
			e.b = appendEscaped(e.b, labels[i+1], true)
			e.b = append(e.b, '"')
		}
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, ' ')
	e.b = appendFloat(e.b, v)
	e.b = append(e.b, '\n')
}

// histogram writes the _bucket (cumulative, in seconds), _sum and _count
// series of h.
func (e *encoder) histogram(name string, h Histogram, labels ...string) {
	var cum uint64
	withLE := append(append(make([]string, 0, len(labels)+2), labels...), "le", "")
	for i, b := range h.Bounds {
		if i < len(h.Counts) {
			cum += h.Counts[i]
		}
		withLE[len(withLE)-1] = string(appendFloat(nil, b.Seconds()))
		e.sample(name+"_bucket", float64(cum), withLE...)
	}
	withLE[len(withLE)-1] = "+Inf"
	e.sample(name+"_bucket", float64(h.Count), withLE...)
	e.sample(name+"_sum", h.Sum.Seconds(), labels...)
	e.sample(name+"_count", float64(h.Count), labels...)
}

func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendEscaped escapes a backslash and a line feed, and in a label value
// a double quote, as the format asks; other bytes pass as they are (the
// format is UTF-8, and names are checked by the config).
func appendEscaped(b []byte, s string, quote bool) []byte {
	if !strings.ContainsAny(s, "\\\n\"") {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
