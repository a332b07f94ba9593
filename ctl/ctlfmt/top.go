package ctlfmt

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/supervise-dev/supervise/ctl"
)

// Sort orders of the top view.
const (
	SortCPU    = "cpu"
	SortMemory = "mem"
	SortName   = "name"
)

// Top is the state of `supervisectl top` between frames: the previous
// CPU time of each program, for its CPU %.
type Top struct {
	Sort string // SortCPU (the default), SortMemory or SortName
	prev map[string]topSample
}

type topSample struct {
	cpu float64
	pid int
	at  time.Time
}

type topRow struct {
	st  ctl.ProgramStatus
	pct float64 // -1: not known yet
}

// Frame writes one screen of the top view at now, cut to width columns
// and height lines. It starts at the top-left corner and clears what the
// previous frame left below and to the right, so the screen never blinks.
func (t *Top) Frame(w io.Writer, sts []ctl.ProgramStatus, now time.Time, width, height int, colour bool) error {
	rows := make([]topRow, len(sts))
	next := make(map[string]topSample, len(sts))
	var running, notReady int
	var cpuSum float64
	var memSum int64
	for i, st := range sts {
		rows[i] = topRow{st: st, pct: -1}
		if st.Pid == 0 {
			continue
		}
		running++
		if st.Ready != nil && !*st.Ready {
			notReady++
		}
		memSum += st.MemoryBytes
		next[st.Name] = topSample{cpu: st.CPUSeconds, pid: st.Pid, at: now}
		// A new run starts its CPU time again: no figure across it.
		if p, ok := t.prev[st.Name]; ok && p.pid == st.Pid && st.CPUSeconds >= p.cpu && now.After(p.at) {
			rows[i].pct = (st.CPUSeconds - p.cpu) / now.Sub(p.at).Seconds() * 100
			cpuSum += rows[i].pct
		}
	}
	t.prev = next
	t.sort(rows)

	var b strings.Builder
	line := func(s string, paintAs string) {
		s = cut(s, width)
		b.WriteString(paint(s, paintAs, colour && paintAs != ""))
		b.WriteString("\x1b[K\n")
	}
	b.WriteString("\x1b[H")
	line(fmt.Sprintf("supervise top  %s  %d programs, %d running, %d not ready  CPU %.1f%%  memory %s",
		now.Format("15:04:05"), len(sts), running, notReady, cpuSum, Bytes(memSum)), bold)
	line(fmt.Sprintf("sorted by %s  [c] CPU  [m] memory  [n] name  [q] quit", t.sortName()), dim)
	line("", "")
	const format = "%-24s %-34s %-5s %8s %6s %8s %-14s"
	line(fmt.Sprintf(format, "NAME", "STATE", "READY", "RESTARTS", "CPU%", "MEMORY", "LAST EXIT"), bold)
	shown := max(height-5, 1)
	for i, r := range rows {
		if i == shown-1 && len(rows) > shown {
			line(fmt.Sprintf("… and %d more (a taller terminal shows them)", len(rows)-i), dim)
			break
		}
		st := r.st
		ready := "-"
		if st.Ready != nil {
			ready = map[bool]string{true: "yes", false: "no"}[*st.Ready]
		}
		pct, mem := "-", "-"
		if r.pct >= 0 {
			pct = strconv.FormatFloat(r.pct, 'f', 1, 64)
		}
		if st.Pid != 0 && st.MemoryBytes > 0 {
			mem = Bytes(st.MemoryBytes)
		}
		line(fmt.Sprintf(format, oneLine(st.Name), State(st), ready, strconv.Itoa(st.Restarts), pct, mem, LastExit(st.LastExit)),
			stateColour(st.State))
	}
	b.WriteString("\x1b[J")
	_, err := io.WriteString(w, b.String())
	return err
}

func (t *Top) sortName() string {
	switch t.Sort {
	case SortMemory:
		return "memory"
	case SortName:
		return "name"
	}
	return "CPU"
}

// sort puts the busiest first (then by name), or orders by name.
func (t *Top) sort(rows []topRow) {
	slices.SortStableFunc(rows, func(a, b topRow) int {
		switch t.Sort {
		case SortName:
		case SortMemory:
			if c := cmp.Compare(b.st.MemoryBytes, a.st.MemoryBytes); c != 0 {
				return c
			}
		default:
			if c := cmp.Compare(b.pct, a.pct); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.st.Name, b.st.Name)
	})
}

// cut shortens s to width runes (0: no limit).
func cut(s string, width int) string {
	if width <= 0 {
		return s
	}
	n := 0
	for i := range s {
		if n == width {
			return s[:i]
		}
		n++
	}
	return s
}
