package logs

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The chunked path stores exactly what the line path did: every line
// whole and once, a line longer than the maximum cut into pieces that are
// stored as lines, rotation only between lines — with lines longer than a
// read, writes that end mid-line, and rotations falling in the middle of
// a read's chunk. The ring keeps the same last lines.
func TestChunkedPathKeepsEveryLineWhole(t *testing.T) {
	const maxLen = 1000
	rng := rand.New(rand.NewPCG(1, 2))
	var out bytes.Buffer // what the program writes
	var want []string    // the lines the files must hold, in order
	for i := 0; out.Len() < 3<<20; i++ {
		n := rng.IntN(300)
		switch rng.IntN(400) {
		case 0:
			n = maxLen + rng.IntN(3*maxLen) // cut into pieces
		case 1:
			n = 40<<10 + rng.IntN(100<<10) // longer than a read
		}
		text := fmt.Sprintf("%07d ", i) + strings.Repeat(string(rune('a'+i%26)), n)
		out.WriteString(text)
		out.WriteByte('\n')
		for len(text) > maxLen {
			want = append(want, text[:maxLen])
			text = text[maxLen:]
		}
		want = append(want, text)
	}
	dir := t.TempDir()
	ring := NewRing(RingConfig{Size: 500, MaxBytes: 64 << 10})
	p, err := NewProgram(ProgramConfig{
		Name: "spew", Ring: ring, MaxLineLength: maxLen,
		Stdout: Output{File: FileConfig{Path: filepath.Join(dir, "out.log"), MaxSize: 200 << 10, MaxFiles: 1000}},
	})
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.NewPipe(Stdout)
	if err != nil {
		t.Fatal(err)
	}
	for data := out.Bytes(); len(data) > 0; {
		n := min(len(data), 1+rng.IntN(64<<10)) // writes that end anywhere
		if _, err := w.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
	w.Close()
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The files, oldest first: out.log.N … out.log.1, out.log.
	var got []string
	for i := 999; i >= 0; i-- {
		name := "out.log"
		if i > 0 {
			name += fmt.Sprintf(".%d", i)
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 200<<10 && bytes.Count(b, []byte{'\n'}) > 1 {
			t.Errorf("%s: %d bytes, over max_size with more than one line", name, len(b))
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Errorf("%s does not end with a whole line", name)
		}
		got = append(got, strings.SplitAfter(string(b), "\n")...)
	}
	var lines []string
	for _, l := range got {
		if l != "" {
			lines = append(lines, strings.TrimSuffix(l, "\n"))
		}
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines stored, want %d", len(lines), len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Fatalf("line %d: %.40q…, want %.40q…", i, lines[i], want[i])
		}
	}
	last := ring.Last(-1)
	if len(last) == 0 || last[len(last)-1].Text != want[len(want)-1] {
		t.Fatalf("the ring's last line is not the program's last")
	}
	for i, l := range last {
		if l.Text != want[len(want)-len(last)+i] {
			t.Fatalf("ring line %d of %d differs", i, len(last))
		}
	}
}

// BenchmarkChunk measures the pump's handling of one 96 KiB read of
// 100-byte lines into a file and a ring, without the pipe: ns per line,
// allocations per line, MB/s.
func BenchmarkChunk(b *testing.B) {
	data := benchLines(96 << 10 / 100)
	for _, bc := range []struct {
		name  string
		sinks func(f *File, r *Ring) Sink
	}{
		{"file", func(f *File, _ *Ring) Sink { return f }},
		{"file+ring", func(f *File, r *Ring) Sink { return Multi(f, r) }},
		{"file+ring+console", func(f *File, r *Ring) Sink {
			return Multi(NewConsole(discard{}, ConsoleConfig{Names: []string{"bench"}}), f, r)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f, err := OpenFile(FileConfig{Path: filepath.Join(b.TempDir(), "b.log"), MaxSize: 64 << 20, MaxFiles: 2})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			sink := bc.sinks(f, NewRing(RingConfig{}))
			p := newPump(bytes.NewReader(nil), sink, PumpConfig{Program: "bench", Stream: Stdout})
			lines := bytes.Count(data, []byte{'\n'})
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				p.sp.write(data)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/line")
			b.ReportMetric(float64(testing.AllocsPerRun(10, func() { p.sp.write(data) }))/float64(lines), "allocs/line")
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// A ring fed chunks holds what a ring fed the same lines one by one
// holds, whatever the mix of chunks, single lines, reads and limits.
func TestRingChunksMatchLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		cfg := RingConfig{Size: 1 + rng.IntN(50), MaxBytes: 200 + rng.IntN(4000)}
		chunked, byLine := NewRing(cfg), NewRing(cfg)
		n := 0
		for range 30 {
			switch rng.IntN(4) {
			case 0: // a single line
				l := Line{Program: "p", Stream: Stdout, Text: fmt.Sprintf("single %d", n)}
				n++
				chunked.WriteLine(l)
				byLine.WriteLine(l)
			case 1: // a read in between
				chunked.Last(rng.IntN(5))
			default:
				var data []byte
				for range 1 + rng.IntN(40) {
					data = fmt.Appendf(data, "line %d %s\n", n, strings.Repeat("x", rng.IntN(100)))
					n++
				}
				c := &Chunk{Program: "p", Stream: Stdout, Data: data}
				chunked.WriteChunk(c)
				c.EachLine(byLine.WriteLine)
			}
		}
		got, want := chunked.Last(-1), byLine.Last(-1)
		if len(got) != len(want) {
			t.Fatalf("round %d (%+v): %d lines held, want %d", round, cfg, len(got), len(want))
		}
		for i := range want {
			if got[i].Text != want[i].Text {
				t.Fatalf("round %d: line %d is %q, want %q", round, i, got[i].Text, want[i].Text)
			}
		}
	}
}

// timestamps = true stamps every line, whichever path it takes; without
// it the file holds the bytes as they came.
func TestFileTimestamps(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 5, 54, 123456789, time.FixedZone("X", 3600))
	for _, stamp := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "t.log")
		f, err := OpenFile(FileConfig{Path: path, Timestamps: stamp})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteChunk(&Chunk{Time: at, Data: []byte("a\nb\n")}); err != nil {
			t.Fatal(err)
		}
		if err := f.WriteLine(Line{Time: at, Text: "c"}); err != nil {
			t.Fatal(err)
		}
		f.Close()
		got, _ := os.ReadFile(path)
		want := "a\nb\nc\n"
		if stamp {
			want = "2026-11-25T09:05:54.123456789Z a\n2026-11-25T09:05:54.123456789Z b\n2026-11-25T09:05:54.123456789Z c\n"
		}
		if string(got) != want {
			t.Errorf("timestamps=%v: %q, want %q", stamp, got, want)
		}
	}
}

// Watch tests lines already held and every new one, by chunk or by line,
// ignores those before since, and reports once.
func TestRingWatch(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	r := NewRing(RingConfig{})
	r.WriteLine(Line{Time: t0, Text: "ready (an earlier run)"})
	r.WriteLine(Line{Time: t0.Add(time.Second), Text: "starting"})
	found := 0
	match := func(s string) bool { return strings.HasPrefix(s, "ready") }
	cancel := r.Watch(t0.Add(time.Second), LineTestFunc(match), func() { found++ })
	if found != 0 {
		t.Fatal("matched a line from before since")
	}
	r.WriteChunk(&Chunk{Time: t0.Add(2 * time.Second), Data: []byte("a\nb\nready now\nready again\n")})
	r.WriteLine(Line{Time: t0.Add(3 * time.Second), Text: "ready once more"})
	cancel()
	cancel()
	if found != 1 {
		t.Fatalf("found %d times, want once", found)
	}
	// Held already: found at once.
	if r.Watch(t0, LineTestFunc(match), func() { found++ }); found != 2 {
		t.Fatal("a held line did not match at once")
	}
	// Cancelled before: never found.
	cancel = r.Watch(t0.Add(time.Hour), LineTestFunc(match), func() { found++ })
	cancel()
	r.WriteLine(Line{Time: t0.Add(2 * time.Hour), Text: "ready late"})
	if found != 2 {
		t.Fatal("a cancelled watch fired")
	}
}

// BenchmarkRingWatch measures a watcher that no line passes, as
// ready_log_line is until the program is ready, on 64 KiB chunks of
// 100-byte lines: the cost of the test per line, with a regexp alone and
// with the literal its matches contain.
func BenchmarkRingWatch(b *testing.B) {
	re := regexp.MustCompile(`^0*99999999 `) // never printed
	for _, bc := range []struct {
		name string
		test LineTest
	}{
		{"regexp", LineTestFunc(re.MatchString)},
		{"literal", literalTest{re, "99999999 "}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			data := benchLines(64 << 10 / 100)
			r := NewRing(RingConfig{})
			r.Watch(time.Time{}, bc.test, func() { b.Fatal("matched") })
			c := &Chunk{Data: data, lines: bytes.Count(data, newline)}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				r.WriteChunk(c)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*c.lines), "ns/line")
		})
	}
}

type literalTest struct {
	re  *regexp.Regexp
	lit string
}

func (t literalTest) Match(s string) bool { return t.re.MatchString(s) }
func (t literalTest) Literal() string     { return t.lit }

// A test with a literal is offered only the lines that hold it, and still
// finds the first that passes: the literal in a line that fails, in the
// first and the last line of a chunk, and a chunk without a newline at
// its end.
func TestRingWatchLiteral(t *testing.T) {
	re := regexp.MustCompile(`^ready on :\d+$`)
	for _, tc := range []struct {
		data string
		want bool
	}{
		{"ready on :80\n", true},
		{"a\nb\nnot ready on :80\nready on :x\nready on :81\n", true},
		{"x\nready on :8", true},
		{"ready on :\nready on :a\n", false},
		{"nothing here\n", false},
	} {
		r := NewRing(RingConfig{})
		found := false
		lt := &spyLiteral{literalTest: literalTest{re, "ready on :"}}
		r.Watch(time.Time{}, lt, func() { found = true })
		r.WriteChunk(&Chunk{Data: []byte(tc.data)})
		if found != tc.want {
			t.Errorf("%q: found %v, want %v", tc.data, found, tc.want)
		}
		for _, s := range lt.seen {
			if !strings.Contains(s, "ready on :") {
				t.Errorf("%q: tested %q, which does not hold the literal", tc.data, s)
			}
		}
	}
}

// spyLiteral records the lines it is offered.
type spyLiteral struct {
	literalTest
	seen []string
}

func (s *spyLiteral) Match(text string) bool {
	s.seen = append(s.seen, text)
	return s.literalTest.Match(text)
}
