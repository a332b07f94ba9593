package logs

import (
	"unicode/utf8"
)

// Program output is hostile to the terminal it is shown on: a program
// running as nobody can print ESC ]0;title BEL, cursor moves that overwrite
// earlier lines, OSC 52 (write the operator's clipboard), or U+202E (turn
// the rest of a line around). AppendTerminalSafe makes such bytes visible
// instead of letting the terminal act on them; files and JSON keep them
// as they are.

// AppendTerminalSafe appends s to dst with every byte that a terminal would
// act on written as a visible escape: C0 controls but TAB as \xNN (ESC is
// \x1b), DEL as \x7f, C1 controls and the Unicode bidi controls as \uNNNN,
// and bytes that are not UTF-8 as \xNN. With keepColour, SGR sequences
// (ESC [ digits and ; or : then m: colours and bold) pass, as less -R
// lets them: a dev server's coloured output stays coloured. Ordinary text,
// and a line with nothing to escape, is appended as it is.
func AppendTerminalSafe(dst []byte, s string, keepColour bool) []byte {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f || i < len(s) && s[i] == '\t' {
		i++
	}
	dst = append(dst, s[:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\t' || c >= 0x20 && c < 0x7f:
			dst = append(dst, c)
			i++
		case c == 0x1b && keepColour:
			if n := sgrLen(s[i:]); n > 0 {
				dst = append(dst, s[i:i+n]...)
				i += n
				continue
			}
			dst = appendHexByte(dst, c)
			i++
		case c < 0x80:
			dst = appendHexByte(dst, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				dst = appendHexByte(dst, c)
			case r >= 0x80 && r <= 0x9f, isBidiControl(r):
				dst = appendU4(dst, r)
			default:
				dst = append(dst, s[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// TerminalSafe is AppendTerminalSafe to a string; s itself when nothing
// needed escaping.
func TerminalSafe(s string, keepColour bool) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c >= 0x7f {
			return string(AppendTerminalSafe(make([]byte, 0, len(s)+16), s, keepColour))
		}
	}
	return s
}

// sgrLen returns the length of the SGR sequence at the start of s
// (ESC [ then digits, ';' or ':' then 'm'), 0 when there is none.
func sgrLen(s string) int {
	if len(s) < 3 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	for j := 2; j < len(s) && j < 64; j++ {
		switch c := s[j]; {
		case c == 'm':
			return j + 1
		case c >= '0' && c <= '9', c == ';', c == ':':
		default:
			return 0
		}
	}
	return 0
}

func isBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

const hexDigits = "0123456789abcdef"

func appendHexByte(dst []byte, c byte) []byte {
	return append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
}

func appendU4(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}
