//go:build linux

package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The measuring logic that needs no supervisor: parsing what the helper
// and the log pipelines wrote, /proc/PID/stat, and the table. No figure
// of a real run is asserted anywhere.

func TestCrashDelays(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t")
	// Two runs then a third start, and a torn last line.
	content := "s 1000\ne 1500\ns 4000\ne 4100\ns 9100\ne 91"
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := crashDelays(file)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{2500, 5000}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("crashDelays = %v, want %v", got, want)
	}
	if d, err := crashDelays(filepath.Join(t.TempDir(), "none")); err != nil || d != nil {
		t.Errorf("missing file: got %v, %v; want nothing, no error", d, err)
	}
}

// numbered is spew line n, as the helper writes it.
func numbered(n int) string {
	return fmt.Sprintf("%010d %s\n", n, strings.Repeat("x", 88))
}

func TestCheckLines(t *testing.T) {
	dir := t.TempDir()
	// Lines 0-4 of 6: 2 twice, 5 missing, one torn line, one foreign line.
	a := numbered(0) + numbered(1) + numbered(2)
	b := numbered(2) + numbered(3) + numbered(4)[:50] + "\n" + numbered(4) + "hello\n"
	for name, s := range map[string]string{"current": b, "@4000.s": a} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, size, _, err := logFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || size != int64(len(a)+len(b)) {
		t.Fatalf("logFiles = %v, %d bytes; want 2 files, %d bytes", files, size, len(a)+len(b))
	}
	found, dup, bad, err := checkLines(files, 6)
	if err != nil {
		t.Fatal(err)
	}
	if found != 5 || dup != 1 || bad != 2 {
		t.Errorf("checkLines = found %d, dup %d, bad %d; want 5, 1, 2", found, dup, bad)
	}
}

func TestParseStat(t *testing.T) {
	// A command name with spaces and a ')' must not shift the fields.
	stat := "4242 (we ird) (x) S 17 4242 4242 0 -1 4194560 100 0 0 0 30 12 0 0 20 0 1 0 98765 1000 200"
	p, err := parseStat(4242, []byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if p.Ppid != 17 || p.Comm != "we ird) (x" || p.State != 'S' || p.CPUTicks != 42 || p.Start != 98765 {
		t.Errorf("parseStat = %+v", p)
	}
}

func TestDescendants(t *testing.T) {
	all := map[int]procEntry{1: {Pid: 1}, 10: {Pid: 10, Ppid: 1}, 11: {Pid: 11, Ppid: 10}, 12: {Pid: 12, Ppid: 11}, 20: {Pid: 20, Ppid: 1}}
	got := descendants(all, 10)
	if len(got) != 3 || got[0].Pid != 10 {
		t.Errorf("descendants(10) = %v, want 10, 11, 12", got)
	}
}

func TestPercentile(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i))
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {99, 99}, {100, 100}, {1, 1}} {
		if got := percentile(s, c.p); got != c.want {
			t.Errorf("percentile(1..100, %v) = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestBestPeerAndRatio(t *testing.T) {
	l := &line{better: "lower", by: map[string]Row{
		"supervise": {Value: 5}, "s6": {Value: 4}, "runit": {Value: math.NaN()}, "supervisord": {Value: 8},
	}}
	name, best, ok := bestPeer(l)
	if !ok || name != "s6" || best != 4 {
		t.Errorf("bestPeer lower = %s %v %v, want s6 4", name, best, ok)
	}
	l.better = "higher"
	if name, best, _ := bestPeer(l); name != "supervisord" || best != 8 {
		t.Errorf("bestPeer higher = %s %v, want supervisord 8", name, best)
	}
	for _, c := range []struct {
		v, best float64
		want    string
	}{{5, 4, "1.25"}, {0, 0, "1.00"}, {3, 0, "∞"}, {1.87, 1004, "0.0019"}, {500, 2, "250"}} {
		if got := formatRatio(c.v, c.best); got != c.want {
			t.Errorf("formatRatio(%v, %v) = %q, want %q", c.v, c.best, got, c.want)
		}
	}
}

func TestReportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.tsv")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeHeader(f, [][2]string{{"date", "D"}, {"mode", "quick"}}); err != nil {
		t.Fatal(err)
	}
	rows := []Row{
		{Bench: "stop", Metric: "stop-all, N=100", Impl: "supervise", Value: 20, Unit: "ms", Better: "lower", Samples: 1, LoadStart: "1.0 1 1", LoadEnd: "2.0 1 1", Note: "tab\there"},
		{Bench: "stop", Metric: "stop-all, N=100", Impl: "s6", Value: 10, Unit: "ms", Better: "lower", Samples: 1, LoadStart: "1 1 1", LoadEnd: "3.0 1 1"},
		{Bench: "log", Metric: "log failed", Impl: "runit", Value: math.NaN(), Note: "broken"},
	}
	for _, r := range rows {
		if err := writeRow(f, r); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	got, comments, err := readTSV(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Note != "tab here" || !math.IsNaN(got[2].Value) || comment(comments, "mode") != "quick" {
		t.Fatalf("readTSV = %+v, %v", got, comments)
	}
	var b strings.Builder
	renderMarkdown(&b, got, comments)
	md := b.String()
	for _, want := range []string{
		"| stop-all, N=100 ↓ | ms | 20.0 | 10.0 | 10.0 (s6) | 2.00 | 1.0 → 3.0 |",
		"FAILED: log, runit: broken",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestAggregate(t *testing.T) {
	run := func(v float64, load string) []Row {
		return []Row{{Impl: "s6", Metric: "stop", Value: v, Samples: 1, Note: "took " + formatValue(v), LoadStart: load, LoadEnd: load}}
	}
	failed := []Row{{Impl: "runit", Metric: "fleet failed", Value: math.NaN(), Note: "boom"}}
	got := aggregate([][]Row{run(30, "1"), failed, run(10, "2"), run(20, "3")})
	if len(got) != 2 {
		t.Fatalf("aggregate = %+v, want the failure and one s6 row", got)
	}
	if got[0].Note != "boom" {
		t.Errorf("failure row = %+v", got[0])
	}
	r := got[1]
	if r.Value != 20 || r.Samples != 3 || r.LoadStart != "1" || r.LoadEnd != "3" || r.Note != "took 20.0; median of 30.0, 10.0, 20.0" {
		t.Errorf("aggregated row = %+v", r)
	}
	// A step run once passes through untouched.
	one := aggregate([][]Row{run(7, "1")})
	if len(one) != 1 || one[0].Value != 7 || one[0].Note != "took 7.00" {
		t.Errorf("single run = %+v", one)
	}
}
