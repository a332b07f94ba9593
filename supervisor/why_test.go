package supervisor

import (
	"slices"
	"strings"
	"testing"

	"github.com/supervise-dev/supervise/logs"
)

// runTail keeps the last n lines of each stream, leaves hooks' lines out,
// and bounds each line and each stream in bytes.
func TestRunTail(t *testing.T) {
	var lines []logs.Line
	for _, s := range []string{"o1", "o2", "o3"} {
		lines = append(lines, logs.Line{Stream: logs.Stdout, Text: s})
	}
	lines = append(lines, logs.Line{Stream: "pre_start", Text: "hook"}, logs.Line{Stream: logs.Stderr, Text: "e1"})
	out, errs, trunc := runTail(lines, 2)
	if !slices.Equal(out, []string{"o2", "o3"}) || !slices.Equal(errs, []string{"e1"}) || !trunc {
		t.Errorf("runTail = %q %q %v", out, errs, trunc)
	}

	long := strings.Repeat("é", 1<<20) // 2 MiB of two-byte characters
	var big []logs.Line
	for range 100 {
		big = append(big, logs.Line{Stream: logs.Stdout, Text: long})
	}
	big = append(big, logs.Line{Stream: logs.Stdout, Text: "last"})
	out, _, trunc = runTail(big, 1000)
	total := 0
	for _, l := range out {
		total += len(l)
		if len(l) > tailLineBytes+len("…") || !strings.HasSuffix(l, "…") && l != "last" {
			t.Fatalf("a kept line of %d bytes: %.20q", len(l), l)
		}
	}
	if total > tailStreamBytes+tailLineBytes+len("…") || out[len(out)-1] != "last" || !trunc {
		t.Errorf("runTail kept %d lines, %d bytes, last %.10q", len(out), total, out[len(out)-1])
	}
}

// The book forgets the runs of instances gone from the config.
func TestRunBookPrune(t *testing.T) {
	b := runBook{runs: map[string]*runPage{"web": {}, "old": {}, "db": {}}}
	b.pruneLocked([]string{"web", "db", "new"})
	if len(b.runs) != 2 || b.runs["web"] == nil || b.runs["db"] == nil {
		t.Errorf("after prune: %v", b.runs)
	}
}
