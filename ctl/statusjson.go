package ctl

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendStatusJSON appends sts as a JSON array, exactly the fields and
// names of ProgramStatus's json tags (TestStatusJSONMatchesEncodingJSON
// holds it to encoding/json). Status is what scripts poll, with a thousand
// programs; this is about five times faster than reflection.
func appendStatusJSON(b []byte, sts []ProgramStatus) []byte {
	b = append(b, '[')
	for i := range sts {
		if i > 0 {
			b = append(b, ',')
		}
		st := &sts[i]
		b = append(b, `{"name":`...)
		b = appendJSONString(b, st.Name)
		b = append(b, `,"state":`...)
		b = appendJSONString(b, st.State)
		if st.Ready != nil {
			b = append(b, `,"ready":`...)
			b = strconv.AppendBool(b, *st.Ready)
		}
		b = append(b, `,"pid":`...)
		b = strconv.AppendInt(b, int64(st.Pid), 10)
		b = append(b, `,"restarts":`...)
		b = strconv.AppendInt(b, int64(st.Restarts), 10)
		b = append(b, `,"started_at":`...)
		if st.StartedAt != nil {
			b = appendJSONTime(b, *st.StartedAt)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `,"last_exit":`...)
		if e := st.LastExit; e != nil {
			b = append(b, `{"code":`...)
			b = strconv.AppendInt(b, int64(e.Code), 10)
			if e.Signal != "" {
				b = append(b, `,"signal":`...)
				b = appendJSONString(b, e.Signal)
			}
			b = append(b, `,"reason":`...)
			b = appendJSONString(b, e.Reason)
			b = append(b, `,"finished_at":`...)
			b = appendJSONTime(b, e.FinishedAt)
			b = append(b, '}')
		} else {
			b = append(b, "null"...)
		}
		if st.NextStartInMs != 0 {
			b = append(b, `,"next_start_in_ms":`...)
			b = strconv.AppendInt(b, st.NextStartInMs, 10)
		}
		b = append(b, `,"memory_bytes":`...)
		b = strconv.AppendInt(b, st.MemoryBytes, 10)
		b = append(b, `,"cpu_seconds":`...)
		b = appendJSONFloat(b, st.CPUSeconds)
		if st.Message != "" {
			b = append(b, `,"message":`...)
			b = appendJSONString(b, st.Message)
		}
		if len(st.Probes) > 0 {
			b = appendProbesJSON(b, st.Probes)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendProbesJSON writes the probes field, keys sorted as encoding/json
// sorts them.
func appendProbesJSON(b []byte, probes map[string]ProbeResult) []byte {
	b = append(b, `,"probes":{`...)
	for i, k := range slices.Sorted(maps.Keys(probes)) {
		if i > 0 {
			b = append(b, ',')
		}
		r := probes[k]
		b = appendJSONString(b, k)
		b = append(b, `:{"ok":`...)
		b = strconv.AppendBool(b, r.OK)
		if r.Message != "" {
			b = append(b, `,"message":`...)
			b = appendJSONString(b, r.Message)
		}
		b = append(b, `,"time":`...)
		b = appendJSONTime(b, r.Time)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendJSONTime writes t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds).
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendJSONFloat writes f as encoding/json does; NaN and infinities,
// which JSON cannot carry, become 0.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		b = strconv.AppendFloat(b, f, 'e', -1, 64)
		// "1e-07" → "1e-7", as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return b
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s quoted, escaping what JSON requires and what
// encoding/json escapes besides (<, >, &, U+2028, U+2029); invalid UTF-8
// becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
