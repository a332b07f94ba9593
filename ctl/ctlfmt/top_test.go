package ctlfmt

import (
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/ctl"
)

func TestTopFrame(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	yes := true
	sts := func(busyCPU, idleCPU float64, busyPid int) []ctl.ProgramStatus {
		return []ctl.ProgramStatus{
			{Name: "idle", State: "Running", Pid: 10, CPUSeconds: idleCPU, MemoryBytes: 300 << 20},
			{Name: "busy", State: "Running", Pid: busyPid, CPUSeconds: busyCPU, MemoryBytes: 1 << 20, Ready: &yes, Restarts: 2},
			{Name: "down", State: "Failed", LastExit: &ctl.ExitInfo{Code: 3, Reason: "Error"}},
		}
	}
	top := &Top{}
	var b strings.Builder
	if err := top.Frame(&b, sts(1, 1, 11), t0, 100, 40, false); err != nil {
		t.Fatal(err)
	}
	first := b.String()
	if !strings.HasPrefix(first, "\x1b[H") || !strings.HasSuffix(first, "\x1b[J") {
		t.Errorf("frame does not start at home and clear the rest: %q", first)
	}
	for _, want := range []string{"3 programs, 2 running, 0 not ready", "sorted by CPU", "busy", "idle", "down", "exit 3"} {
		if !strings.Contains(first, want) {
			t.Errorf("first frame has no %q:\n%s", want, first)
		}
	}
	// No CPU % before a second sample.
	if line := lineOf(first, "busy"); !strings.Contains(line, "     - ") {
		t.Errorf("busy on the first frame: %q", line)
	}

	// Two seconds later busy used 1.5 s: 75 %; idle 0.02 s: 1 %. Busy first.
	b.Reset()
	top.Frame(&b, sts(2.5, 1.02, 11), t0.Add(2*time.Second), 100, 40, false)
	second := b.String()
	if l := lineOf(second, "busy"); !strings.Contains(l, "75.0") || !strings.Contains(l, "yes") || !strings.Contains(l, "1Mi") {
		t.Errorf("busy: %q", l)
	}
	if l := lineOf(second, "idle"); !strings.Contains(l, "1.0") || !strings.Contains(l, "300Mi") {
		t.Errorf("idle: %q", l)
	}
	if strings.Index(second, "busy") > strings.Index(second, "idle") {
		t.Errorf("not sorted by CPU:\n%s", second)
	}
	if !strings.Contains(second, "CPU 76.0%") {
		t.Errorf("total CPU: %s", second)
	}

	// A new run (another pid, its CPU time from 0) has no figure yet.
	b.Reset()
	top.Frame(&b, sts(0.1, 1.04, 12), t0.Add(4*time.Second), 100, 40, false)
	if l := lineOf(b.String(), "busy"); !strings.Contains(l, "     - ") {
		t.Errorf("busy after a restart: %q", l)
	}

	// By memory: idle first; by name: busy, down, idle.
	top.Sort = SortMemory
	b.Reset()
	top.Frame(&b, sts(0.2, 1.05, 12), t0.Add(6*time.Second), 100, 40, false)
	if s := b.String(); strings.Index(s, "idle ") > strings.Index(s, "busy ") || !strings.Contains(s, "sorted by memory") {
		t.Errorf("not sorted by memory:\n%s", s)
	}
	top.Sort = SortName
	b.Reset()
	top.Frame(&b, sts(0.2, 1.05, 12), t0.Add(8*time.Second), 100, 40, false)
	if s := b.String(); !(strings.Index(s, "busy ") < strings.Index(s, "down ") && strings.Index(s, "down ") < strings.Index(s, "idle ")) {
		t.Errorf("not sorted by name:\n%s", s)
	}

	// A short, narrow terminal: lines cut, the rest counted.
	b.Reset()
	top.Frame(&b, sts(0.2, 1.05, 12), t0.Add(10*time.Second), 30, 7, false)
	s := b.String()
	if !strings.Contains(s, "… and 2 more") {
		t.Errorf("short terminal:\n%s", s)
	}
	for line := range strings.Lines(strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(s, "\x1b[K", ""), "\x1b[H", ""), "\x1b[J", "")) {
		if n := len([]rune(strings.TrimRight(line, "\n"))); n > 30 {
			t.Errorf("line of %d runes on a 30-column terminal: %q", n, line)
		}
	}
}

func lineOf(frame, name string) string {
	for line := range strings.Lines(frame) {
		if strings.HasPrefix(line, name+" ") {
			return line
		}
	}
	return ""
}

// TestTopFitsWidth: at any usual terminal width every row shows its
// memory and its last exit in full; the name and the state give up
// columns first, and the whole of each only where the width allows.
func TestTopFitsWidth(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	no := false
	sts := []ctl.ProgramStatus{
		{Name: "payments-reconciliation-worker:12", State: "Running", Pid: 10, CPUSeconds: 1, MemoryBytes: 300 << 20, Ready: &no, Restarts: 1234,
			LastExit: &ctl.ExitInfo{Signal: "KILL", Reason: "Signaled"}},
		{Name: "db", State: "CrashLoopBackOff", NextStartInMs: 290_000, Restarts: 7, LastExit: &ctl.ExitInfo{Code: 3, Reason: "Error"}},
		{Name: "web", State: "Running", Pid: 11, CPUSeconds: 2, MemoryBytes: 1 << 30, LastExit: &ctl.ExitInfo{Reason: "OOMKilled"}},
	}
	for _, width := range []int{80, 100, 120, 200} {
		var b strings.Builder
		if err := (&Top{Sort: SortName}).Frame(&b, sts, t0, width, 40, false); err != nil {
			t.Fatal(err)
		}
		frame := strings.NewReplacer("\x1b[K", "", "\x1b[H", "", "\x1b[J", "").Replace(b.String())
		for line := range strings.Lines(frame) {
			if n := len([]rune(strings.TrimRight(line, "\n"))); n > width {
				t.Errorf("width %d: a line of %d runes: %q", width, n, line)
			}
		}
		for _, want := range []string{"NAME", "STATE", "READY", "RESTARTS", "CPU%", "MEMORY", "LAST EXIT",
			"300Mi", "1Gi", "signal KILL", "exit 3", "OOMKilled", "1234"} {
			if !strings.Contains(frame, want) {
				t.Errorf("width %d: no %q:\n%s", width, want, frame)
			}
		}
		full := strings.Contains(frame, "payments-reconciliation-worker:12 ") && strings.Contains(frame, "CrashLoopBackOff (next start in 4m50s)")
		if width >= 120 && !full {
			t.Errorf("width %d: a name or state shortened with room to spare:\n%s", width, frame)
		}
		if width == 80 && (full || !strings.Contains(frame, "…")) {
			t.Errorf("width 80: want the long name or state ellipsized:\n%s", frame)
		}
	}
}

// TestTopDropsColumnsInOrder: on a terminal too narrow for every column
// at its least, RESTARTS goes first, then READY, then LAST EXIT; the
// name, the state, CPU% and memory stay.
func TestTopDropsColumnsInOrder(t *testing.T) {
	sts := []ctl.ProgramStatus{{Name: "web", State: "Running", Pid: 11, MemoryBytes: 1 << 20, LastExit: &ctl.ExitInfo{Code: 1}}}
	for _, tc := range []struct {
		width      int
		kept, gone []string
	}{
		// NAME 4, STATE 7, READY 5, RESTARTS 8, CPU% 6, MEMORY 7, LAST EXIT 9, and the spaces.
		{52, []string{"NAME", "STATE", "READY", "RESTARTS", "CPU%", "MEMORY", "LAST EXIT"}, nil},
		{51, []string{"NAME", "STATE", "READY", "CPU%", "MEMORY", "LAST EXIT"}, []string{"RESTARTS"}},
		{42, []string{"NAME", "STATE", "CPU%", "MEMORY", "LAST EXIT"}, []string{"RESTARTS", "READY"}},
		{36, []string{"NAME", "STATE", "CPU%", "MEMORY"}, []string{"RESTARTS", "READY", "LAST EXIT"}},
		{26, []string{"NAME", "STATE", "CPU%"}, []string{"RESTARTS", "READY", "LAST EXIT", "MEMORY"}},
	} {
		var b strings.Builder
		if err := (&Top{}).Frame(&b, sts, time.Now(), tc.width, 40, false); err != nil {
			t.Fatal(err)
		}
		head := lineOf(b.String(), "NAME")
		for _, c := range tc.kept {
			if !strings.Contains(head, c) {
				t.Errorf("width %d: no %s in %q", tc.width, c, head)
			}
		}
		for _, c := range tc.gone {
			if strings.Contains(head, c) {
				t.Errorf("width %d: %s still in %q", tc.width, c, head)
			}
		}
	}
}

// The third line is the why line of the selected instance, the first of
// the status until one is chosen; Move walks the frame's order.
func TestTopWhyLine(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	all := []ctl.ProgramStatus{{Name: "a", State: "Failed"}, {Name: "b", State: "Running", Pid: 7}}
	top := &Top{Sort: SortName}
	var b strings.Builder
	top.Frame(&b, all, t0, 100, 20, false)
	if top.Selected != "a" {
		t.Fatalf("selected %q, want the first, a", top.Selected)
	}
	top.Why = &ctl.Why{Name: "a", LastRun: &ctl.RunRecord{Status: 3, Code: 3, Reason: "Error", EndedAt: t0}}
	b.Reset()
	top.Frame(&b, all, t0, 100, 20, false)
	if !strings.Contains(b.String(), "why a: exit 3, Error at ") {
		t.Errorf("no why line:\n%s", b.String())
	}
	top.Move(1)
	top.Move(1)
	if top.Selected != "b" {
		t.Errorf("after two moves down: %q, want b (the last row)", top.Selected)
	}
	b.Reset()
	top.Frame(&b, all, t0, 100, 20, false)
	if strings.Contains(b.String(), "why a:") {
		t.Errorf("a's why line shows with b selected:\n%s", b.String())
	}
	top.Move(-5)
	if top.Selected != "a" {
		t.Errorf("after moving up past the top: %q", top.Selected)
	}
}
