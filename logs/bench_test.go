package logs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// benchLine is 100 bytes with its newline.
func benchLines(n int) []byte {
	var b []byte
	for i := range n {
		s := fmt.Sprintf("line %09d ", i)
		for len(s) < 99 {
			s += "x"
		}
		b = append(b, s...)
		b = append(b, '\n')
	}
	return b
}

// BenchmarkPipe measures one writer of 100-byte lines, writing 8 KiB at a
// time (what a program's buffered stdout does) or 64 KiB (a writer that
// fills the pipe) as fast as it can, through a Program's pipe into its
// sinks; the figures are MB/s of program output and the CPU time the
// process spent per line (writer and pump, user and system).
func BenchmarkPipe(b *testing.B) {
	for _, bc := range []struct {
		name     string
		ring     bool
		pipeSize int
		write    int
	}{
		{"file", false, 0, 8 << 10},
		{"file+ring", true, 0, 8 << 10},
		{"file+ring/write=64KiB", true, 0, 64 << 10},
		{"file/pipe=1MiB", false, 1 << 20, 8 << 10},
		{"file+ring/pipe=1MiB", true, 1 << 20, 8 << 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var ring *Ring
			if bc.ring {
				ring = NewRing(RingConfig{})
			}
			p, err := NewProgram(ProgramConfig{
				Name: "bench", Ring: ring, PipeSize: bc.pipeSize,
				Stdout: Output{File: FileConfig{Path: filepath.Join(b.TempDir(), "bench.log"), MaxSize: 256 << 20, MaxFiles: 2}},
			})
			if err != nil {
				b.Fatal(err)
			}
			chunk := benchLines(bc.write / 100 * 10) // whole lines, written in pieces of bc.write
			w, err := p.NewPipe(Stdout)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(100)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			left := b.N * 100
			for left > 0 {
				for off := 0; off < len(chunk) && left > 0; off += bc.write {
					piece := chunk[off:min(off+bc.write, len(chunk))]
					piece = piece[:min(len(piece), left)]
					if _, err := w.Write(piece); err != nil {
						b.Fatal(err)
					}
					left -= len(piece)
				}
			}
			w.Close()
			if err := p.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/line")
		})
	}
}

// BenchmarkConsole measures formatting lines of 4 programs into a console
// writing to io.Discard.
func BenchmarkConsole(b *testing.B) {
	c := NewConsole(io.Discard, ConsoleConfig{Color: ColorAlways})
	lines := make([]Line, 4)
	for i := range lines {
		lines[i] = Line{Program: "prog" + strconv.Itoa(i), Stream: Stdout, Text: string(benchLines(1)[:99])}
	}
	b.SetBytes(100)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.WriteLine(lines[i%4])
			i++
		}
	})
	c.Close()
}

// BenchmarkSplitChunks measures the splitter alone on 128 KiB reads of
// 100-byte lines, the shape a fast writer gives the pump: the work done on
// each byte before any sink sees it.
func BenchmarkSplitChunks(b *testing.B) {
	data := benchLines(128 << 10 / 100)
	data = data[:len(data)/100*100]
	var lines int
	s := newSplitter(0, func([]byte, bool) { lines++ })
	s.chunk = func(c []byte) { lines += bytes.Count(c, newline) }
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s.write(data)
	}
	if lines == 0 {
		b.Fatal("no lines")
	}
}

// cpuTime is the user and system time the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
