package logs

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// piece is a line's text and Partial flag.
type piece struct {
	text    string
	partial bool
}

func (p piece) String() string {
	if p.partial {
		return strconv.Quote(p.text) + "(partial)"
	}
	return strconv.Quote(p.text)
}

func pieces(lines []Line) []piece {
	var out []piece
	for _, l := range lines {
		out = append(out, piece{l.Text, l.Partial})
	}
	return out
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

var splitCases = []struct {
	name string
	in   string
	want []piece
}{
	{"empty", "", nil},
	{"two lines", "a\nbc\n", []piece{{"a", false}, {"bc", false}}},
	{"empty lines", "\n\n", []piece{{"", false}, {"", false}}},
	{"no newline at end", "abc", []piece{{"abc", true}}},
	{"line then partial", "abc\ndef", []piece{{"abc", false}, {"def", true}}},
	{"carriage return kept", "a\r\n", []piece{{"a\r", false}}},
	{"exactly max", "12345678\n", []piece{{"12345678", false}}},
	{"exactly max at eof", "12345678", []piece{{"12345678", true}}},
	{"max plus one", "123456789\n", []piece{{"12345678", true}, {"9", false}}},
	{"twice max", "1234567812345678\n", []piece{{"12345678", true}, {"12345678", false}}},
	{"twice max at eof", "1234567812345678", []piece{{"12345678", true}, {"12345678", true}}},
	{"long then short", "1234567890\nx\n", []piece{{"12345678", true}, {"90", false}, {"x", false}}},
	// "€" is 3 bytes at offsets 7-9: the cut moves back to keep it whole.
	{"utf8 kept whole", "abcdefg€x\n", []piece{{"abcdefg", true}, {"€x", false}}},
	{"no rune start", strings.Repeat("\x82", 10) + "\n",
		[]piece{{strings.Repeat("\x82", 8), true}, {"\x82\x82", false}}},
}

var readers = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"one byte", iotest.OneByteReader},
	{"half", iotest.HalfReader},
	{"data with eof", iotest.DataErrReader},
	{"3 bytes", func(r io.Reader) io.Reader { return chunkReader{r, 3} }},
	{"9 bytes", func(r io.Reader) io.Reader { return chunkReader{r, 9} }},
}

func TestPumpSplits(t *testing.T) {
	for _, tc := range splitCases {
		for _, rd := range readers {
			t.Run(tc.name+"/"+rd.name, func(t *testing.T) {
				var c collect
				p := StartPump(rd.wrap(strings.NewReader(tc.in)), &c, PumpConfig{Program: "web", Stream: Stderr, MaxLineLength: 8})
				if err := p.Wait(); err != nil {
					t.Fatalf("Wait: %v", err)
				}
				lines := c.all()
				if got := pieces(lines); !slices.Equal(got, tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
				for _, l := range lines {
					if l.Program != "web" || l.Stream != Stderr || l.Time.IsZero() {
						t.Errorf("line %q: program %q stream %q time %v, want web stderr and a time", l.Text, l.Program, l.Stream, l.Time)
					}
				}
				if int(p.Lines()) != len(tc.want) {
					t.Errorf("Lines() = %d, want %d", p.Lines(), len(tc.want))
				}
				if len(tc.want) > 0 && c.flushes == 0 {
					t.Errorf("sink never flushed")
				}
			})
		}
	}
}

func TestLineWriterSplits(t *testing.T) {
	for _, tc := range splitCases {
		for _, size := range []int{1, 3, 100} {
			var c collect
			w := NewLineWriter(&c, PumpConfig{Program: "web", Stream: "pre_start", MaxLineLength: 8})
			for in := tc.in; len(in) > 0; {
				n := min(size, len(in))
				if k, err := w.Write([]byte(in[:n])); k != n || err != nil {
					t.Fatalf("%s: Write = %d, %v", tc.name, k, err)
				}
				in = in[n:]
			}
			if err := w.Close(); err != nil {
				t.Fatalf("%s: Close: %v", tc.name, err)
			}
			if got := pieces(c.all()); !slices.Equal(got, tc.want) {
				t.Errorf("%s, writes of %d: got %v, want %v", tc.name, size, got, tc.want)
			}
			if _, err := w.Write([]byte("x")); !errors.Is(err, ErrClosed) {
				t.Errorf("Write after Close: %v, want ErrClosed", err)
			}
		}
	}
}

// TestPumpSplitIndependentOfReads feeds random text in random pieces and
// compares with one read of the whole: the lines depend only on the bytes.
func TestPumpSplitIndependentOfReads(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab\n€\x82")
	for i := range 200 {
		in := make([]byte, rnd.IntN(400))
		for j := range in {
			in[j] = alphabet[rnd.IntN(len(alphabet))]
		}
		maxLen := 1 + rnd.IntN(40)
		var whole, pieced collect
		StartPump(bytes.NewReader(in), &whole, PumpConfig{MaxLineLength: maxLen}).Wait()
		StartPump(&randomReader{bytes.NewReader(in), rnd}, &pieced, PumpConfig{MaxLineLength: maxLen}).Wait()
		a, b := pieces(whole.all()), pieces(pieced.all())
		if !slices.Equal(a, b) {
			t.Fatalf("case %d (max %d, %q): whole read gives %v, pieces give %v", i, maxLen, in, a, b)
		}
		// Joining the pieces gives the input back.
		var joined strings.Builder
		for _, p := range a {
			if len(p.text) > maxLen {
				t.Fatalf("case %d: piece %q longer than %d", i, p.text, maxLen)
			}
			joined.WriteString(p.text)
			if !p.partial {
				joined.WriteByte('\n')
			}
		}
		if joined.String() != string(in) {
			t.Fatalf("case %d: joined pieces %q, want %q", i, joined.String(), in)
		}
	}
}

type randomReader struct {
	r   io.Reader
	rnd *rand.Rand
}

func (r *randomReader) Read(p []byte) (int, error) {
	return r.r.Read(p[:min(len(p), 1+r.rnd.IntN(50))])
}

func TestPumpDefaultMaxLength(t *testing.T) {
	long := strings.Repeat("x", DefaultMaxLineLength+10)
	var c collect
	StartPump(strings.NewReader(long+"\n"), &c, PumpConfig{}).Wait()
	want := []piece{{long[:DefaultMaxLineLength], true}, {long[DefaultMaxLineLength:], false}}
	if got := pieces(c.all()); !slices.Equal(got, want) {
		t.Fatalf("got %d pieces, want 2 of %d and 10 bytes", len(got), DefaultMaxLineLength)
	}
}

func TestPumpReadError(t *testing.T) {
	boom := errors.New("boom")
	var c collect
	p := StartPump(io.MultiReader(strings.NewReader("a\nrest"), iotest.ErrReader(boom)), &c, PumpConfig{})
	if err := p.Wait(); !errors.Is(err, boom) {
		t.Fatalf("Wait = %v, want boom", err)
	}
	want := []piece{{"a", false}, {"rest", true}}
	if got := pieces(c.all()); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A pipe closed under the pump ends it without an error.
func TestPumpClosedReader(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var c collect
	p := StartPump(r, &c, PumpConfig{})
	w.Write([]byte("one\ntw"))
	r.Close()
	if err := p.Wait(); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
}

func TestPumpTime(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var c collect
	StartPump(strings.NewReader("a\nb"), &c, PumpConfig{Now: func() time.Time { return at }}).Wait()
	for _, l := range c.all() {
		if !l.Time.Equal(at) {
			t.Errorf("line %q at %v, want %v", l.Text, l.Time, at)
		}
	}
}

// failSink fails the lines whose text is in fail.
type failSink struct {
	collect
	fail map[string]bool
}

func (f *failSink) WriteLine(l Line) error {
	if f.fail[l.Text] {
		return errors.New("disk full")
	}
	return f.collect.WriteLine(l)
}

// A failing sink does not stop the pump; each run of failures is logged
// once, and a count at the end.
func TestPumpSinkErrors(t *testing.T) {
	var logBuf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	s := &failSink{fail: map[string]bool{"b": true, "c": true, "e": true}}
	p := StartPump(strings.NewReader("a\nb\nc\nd\ne\nf\n"), s, PumpConfig{Program: "web", Logger: log})
	if err := p.Wait(); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	want := []piece{{"a", false}, {"d", false}, {"f", false}}
	if got := pieces(s.all()); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	out := logBuf.String()
	if n := strings.Count(out, "disk full"); n != 2 {
		t.Errorf("logged %d errors, want 2 (one per run of failures):\n%s", n, out)
	}
	if !strings.Contains(out, "errors=3") || !strings.Contains(out, "program=web") {
		t.Errorf("log lacks the count of 3 errors or the program:\n%s", out)
	}
}

// TestSplitterChunksCutLikeLines checks the chunked scan against the line
// by line one, with lines of about the maximum length, where the scan's
// windows decide: the same pieces, in the same order.
func TestSplitterChunksCutLikeLines(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		maxLen := 1 + rnd.IntN(20)
		var in []byte
		for range rnd.IntN(60) {
			n := max(0, maxLen-3+rnd.IntN(7))
			if rnd.IntN(4) == 0 {
				n = rnd.IntN(4 * maxLen)
			}
			in = append(in, bytes.Repeat([]byte{'a' + byte(i%26)}, n)...)
			in = append(in, '\n')
		}
		split := func(chunked bool) []piece {
			var got []piece
			s := newSplitter(maxLen, func(b []byte, partial bool) { got = append(got, piece{string(b), partial}) })
			if chunked {
				s.chunk = func(b []byte) {
					for _, l := range strings.SplitAfter(string(b), "\n") {
						if l != "" {
							got = append(got, piece{strings.TrimSuffix(l, "\n"), false})
						}
					}
				}
			}
			for p := in; len(p) > 0; {
				n := min(len(p), 1+rnd.IntN(3*maxLen+10))
				s.write(p[:n])
				p = p[n:]
			}
			s.finish()
			return got
		}
		if a, b := split(false), split(true); !slices.Equal(a, b) {
			t.Fatalf("case %d (max %d, %q): by line %v, chunked %v", i, maxLen, in, a, b)
		}
	}
}
