package logs

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTerminalSafe(t *testing.T) {
	for _, tc := range []struct {
		in, colour, plain string
	}{
		{"plain text", "plain text", "plain text"},
		{"tab\tkept", "tab\tkept", "tab\tkept"},
		{"héllo wörld ✓ 日本", "héllo wörld ✓ 日本", "héllo wörld ✓ 日本"},
		{"\x1b]0;pwned\x07title", `\x1b]0;pwned\x07title`, `\x1b]0;pwned\x07title`},
		{"\x1b[2Jclear", `\x1b[2Jclear`, `\x1b[2Jclear`},
		{"\x1b[31mred\x1b[0m", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"\x1b[38;5;196mx\x1b[1;4m", "\x1b[38;5;196mx\x1b[1;4m", `\x1b[38;5;196mx\x1b[1;4m`},
		{"\x1b[31", `\x1b[31`, `\x1b[31`},                                              // cut short
		{"\x1b[31;Hm", `\x1b[31;Hm`, `\x1b[31;Hm`},                                     // not SGR
		{"\x1b]52;c;cGF3bmVk\x07", `\x1b]52;c;cGF3bmVk\x07`, `\x1b]52;c;cGF3bmVk\x07`}, // clipboard
		{"over\rwrite\bback", `over\x0dwrite\x08back`, `over\x0dwrite\x08back`},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"c1 \u009b31m csi", `c1 \u009b31m csi`, `c1 \u009b31m csi`},
		{"bidi \u202eevil", `bidi \u202eevil`, `bidi \u202eevil`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`, `bad \xff\xfe utf8`},
		{"nul\x00", `nul\x00`, `nul\x00`},
	} {
		if got := TerminalSafe(tc.in, true); got != tc.colour {
			t.Errorf("TerminalSafe(%q, colours) = %q, want %q", tc.in, got, tc.colour)
		}
		if got := TerminalSafe(tc.in, false); got != tc.plain {
			t.Errorf("TerminalSafe(%q) = %q, want %q", tc.in, got, tc.plain)
		}
	}
}

// FuzzTerminalSafe: whatever a program prints, what reaches the terminal
// has no control byte but TAB (and ESC only opening a colour), no C1 or
// bidi control, is UTF-8, and printable input is unchanged.
func FuzzTerminalSafe(f *testing.F) {
	for _, s := range []string{"", "a", "\x1b]0;x\x07", "\x1b[31mred", "\xff", "\u009b", "\u202e", "\x1b[", "\x1b[1;2;3m\x1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, keep := range []bool{false, true} {
			out := TerminalSafe(s, keep)
			if !utf8.ValidString(out) {
				t.Fatalf("%q → %q: not UTF-8", s, out)
			}
			for i := 0; i < len(out); i++ {
				c := out[i]
				switch {
				case c == 0x1b && keep:
					if n := sgrLen(out[i:]); n == 0 {
						t.Fatalf("%q → %q: ESC at %d opens no colour", s, out, i)
					} else {
						i += n - 1
					}
				case c < 0x20 && c != '\t', c == 0x7f:
					t.Fatalf("%q → %q: control byte %#x at %d", s, out, c, i)
				}
			}
			for _, r := range out {
				if r >= 0x80 && r <= 0x9f || isBidiControl(r) {
					t.Fatalf("%q → %q: control rune %U", s, out, r)
				}
			}
			printable := utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
				return r < 0x20 && r != '\t' || r >= 0x7f && r <= 0x9f || isBidiControl(r)
			})
			if printable && out != s {
				t.Fatalf("printable %q changed to %q", s, out)
			}
		}
	})
}

func TestConsoleOnTerminalEscapes(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		var b bytes.Buffer
		c := NewConsole(&b, ConsoleConfig{Color: ColorNever, Terminal: terminal})
		c.WriteLine(Line{Program: "evil", Text: "\x1b]0;pwned\x07\x1b[32mgreen\x1b[0m"})
		c.Flush()
		want := "evil | \x1b]0;pwned\x07\x1b[32mgreen\x1b[0m\n"
		if terminal {
			want = "evil | \\x1b]0;pwned\\x07\x1b[32mgreen\x1b[0m\n"
		}
		if b.String() != want {
			t.Errorf("terminal=%v: %q, want %q", terminal, b.String(), want)
		}
	}
}

// BenchmarkTerminalSafe: the console's cost per line on a terminal, for a
// plain line (appended as it is, no allocation) and one full of escapes.
func BenchmarkTerminalSafe(b *testing.B) {
	for _, tc := range []struct{ name, line string }{
		{"plain", "2026-11-25T03:20:00Z INFO request handled method=GET path=/api/v1/items status=200 took=1.2ms"},
		{"colours", "\x1b[32mINFO\x1b[0m request handled \x1b[1mstatus\x1b[0m=200 took=1.2ms path=/api/v1/items"},
		{"hostile", "\x1b]0;pwned\x07\x1b[2J\x1b[H\x1b]52;c;cGF3bmVk\x07\u202eevil\xff\xfe\r\b\x7f"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			buf := make([]byte, 0, 4096)
			b.SetBytes(int64(len(tc.line)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendTerminalSafe(buf[:0], tc.line, true)
			}
		})
	}
}
