package ctlfmt

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	// Selected names the instance whose why line the view shows; Frame
	// makes it the first one when it is "" or gone. Why is its record,
	// when the caller fetched it.
	Selected string
	Why      *ctl.Why
	order    []string // the names in the last frame's order, for Move
	prev     map[string]topSample
}

// Move selects the instance delta rows below (above, when negative) the
// selected one in the last frame, staying within the rows.
func (t *Top) Move(delta int) {
	if len(t.order) == 0 {
		return
	}
	i := max(slices.Index(t.order, t.Selected), 0)
	t.Selected = t.order[min(max(i+delta, 0), len(t.order)-1)]
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
	rows, sum := t.sample(sts, now)
	t.sort(rows)
	t.order = t.order[:0]
	for _, r := range rows {
		t.order = append(t.order, r.st.Name)
	}
	if !slices.Contains(t.order, t.Selected) {
		t.Selected = ""
		if len(sts) > 0 {
			t.Selected = sts[0].Name
		}
	}

	var b strings.Builder
	line := func(s string, paintAs string) {
		s = cut(s, width)
		b.WriteString(paint(s, paintAs, colour && paintAs != ""))
		b.WriteString("\x1b[K\n")
	}
	b.WriteString("\x1b[H")
	title := fmt.Sprintf("%s  %d programs, %d running, %d not ready  CPU %.1f%%  memory %s",
		now.Format("15:04:05"), len(sts), sum.running, sum.notReady, sum.cpu, Bytes(sum.mem))
	if len("supervise top  "+title) <= width {
		title = "supervise top  " + title
	}
	line(title, bold)
	line(fmt.Sprintf("sorted by %s  [c] CPU  [m] memory  [n] name  [j/k] select  [q] quit", t.sortName()), dim)
	if w := t.Why; w != nil && w.Name == t.Selected {
		line("why "+oneLine(w.Name)+": "+WhyLine(*w), "")
	} else {
		line("", "")
	}
	shown := max(height-5, 1)
	more := 0
	if len(rows) > shown {
		more = len(rows) - (shown - 1)
		rows = rows[:shown-1]
	}
	tab := newTopTable(rows, width)
	line(tab.header(), bold)
	for i, r := range rows {
		if colour && r.st.Name == t.Selected {
			// Reverse video marks the selection; cut before painting, so
			// the escapes never count against the width.
			b.WriteString("\x1b[7m" + paint(cut(tab.row(i), width), stateColour(r.st.State), true) + "\x1b[27m\x1b[K\n")
			continue
		}
		line(tab.row(i), stateColour(r.st.State))
	}
	if more > 0 {
		line(fmt.Sprintf("… and %d more (a taller terminal shows them)", more), dim)
	}
	b.WriteString("\x1b[J")
	_, err := io.WriteString(w, b.String())
	return err
}

// topSum is the top line's figures over every program.
type topSum struct {
	running, notReady int
	cpu               float64 // % of one CPU
	mem               int64
}

// sample makes the rows of a frame at now, with each running program's
// CPU % since the previous frame, and keeps its CPU time for the next.
func (t *Top) sample(sts []ctl.ProgramStatus, now time.Time) ([]topRow, topSum) {
	rows := make([]topRow, len(sts))
	next := make(map[string]topSample, len(sts))
	var sum topSum
	for i, st := range sts {
		rows[i] = topRow{st: st, pct: -1}
		if st.Pid == 0 {
			continue
		}
		sum.running++
		if st.Ready != nil && !*st.Ready {
			sum.notReady++
		}
		sum.mem += st.MemoryBytes
		next[st.Name] = topSample{cpu: st.CPUSeconds, pid: st.Pid, at: now}
		// A new run starts its CPU time again: no figure across it.
		if p, ok := t.prev[st.Name]; ok && p.pid == st.Pid && st.CPUSeconds >= p.cpu && now.After(p.at) {
			rows[i].pct = (st.CPUSeconds - p.cpu) / now.Sub(p.at).Seconds() * 100
			sum.cpu += rows[i].pct
		}
	}
	t.prev = next
	return rows, sum
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

// The columns of the top view, in the order shown. On a narrow terminal
// they are fitted as follows: every column gets at least its least width
// (the name and the state shortened with an ellipsis; a number or a last
// exit never);
// when even that does not fit, whole columns go, least important first:
// RESTARTS, READY, LAST EXIT, MEMORY, CPU% (the name and the state always
// stay, and a line still too wide is cut at the edge). The room left is
// shared by the name and the state, a column at a time, up to what their
// longest cell needs.
const (
	colName = iota
	colState
	colReady
	colRestarts
	colCPU
	colMemory
	colLastExit
	numTopCols
)

var topCols = [numTopCols]struct {
	head  string
	least int  // width never shortened below (the head's, at least)
	short bool // shortened with an ellipsis, down to least; else never
	right bool // a number: aligned right
}{
	colName:     {head: "NAME", least: 12, short: true},
	colState:    {head: "STATE", least: 16, short: true},
	colReady:    {head: "READY", least: 5},
	colRestarts: {head: "RESTARTS", least: 8, right: true},
	colCPU:      {head: "CPU%", least: 6, right: true},
	colMemory:   {head: "MEMORY", least: 7, right: true},
	colLastExit: {head: "LAST EXIT", least: 9},
}

var (
	topDropOrder = []int{colRestarts, colReady, colLastExit, colMemory, colCPU}
	topGrowOrder = []int{colName, colState}
)

// topTable is the rows' cells and the width each shown column gets.
type topTable struct {
	cells [][numTopCols]string
	width [numTopCols]int // 0: the column is not shown
}

func newTopTable(rows []topRow, width int) *topTable {
	t := &topTable{cells: make([][numTopCols]string, len(rows))}
	var ideal, least [numTopCols]int
	for c, col := range topCols {
		ideal[c] = runeLen(col.head)
	}
	for i, r := range rows {
		st := r.st
		ready, pct, mem := "-", "-", "-"
		if st.Ready != nil {
			ready = map[bool]string{true: "yes", false: "no"}[*st.Ready]
		}
		if r.pct >= 0 {
			pct = strconv.FormatFloat(r.pct, 'f', 1, 64)
		}
		if st.Pid != 0 && st.MemoryBytes > 0 {
			mem = Bytes(st.MemoryBytes)
		}
		t.cells[i] = [numTopCols]string{oneLine(st.Name), State(st), ready, strconv.Itoa(st.Restarts), pct, mem, LastExit(st.LastExit)}
		for c, cell := range t.cells[i] {
			ideal[c] = max(ideal[c], runeLen(cell))
		}
	}
	shown := 0
	for c, col := range topCols {
		least[c] = max(ideal[c], col.least)
		if col.short {
			least[c] = min(ideal[c], col.least)
		}
		t.width[c] = least[c]
		shown += least[c] + 1 // and the space before the next
	}
	used := shown - 1
	for _, c := range topDropOrder {
		if used <= width {
			break
		}
		used -= t.width[c] + 1
		t.width[c] = 0
	}
	for grew := true; grew && used < width; {
		grew = false
		for _, c := range topGrowOrder {
			if t.width[c] > 0 && t.width[c] < ideal[c] && used < width {
				t.width[c]++
				used++
				grew = true
			}
		}
	}
	return t
}

func (t *topTable) header() string {
	var heads [numTopCols]string
	for c, col := range topCols {
		heads[c] = col.head
	}
	return t.line(heads)
}

func (t *topTable) row(i int) string { return t.line(t.cells[i]) }

func (t *topTable) line(cells [numTopCols]string) string {
	var b strings.Builder
	for c, col := range topCols {
		w := t.width[c]
		if w == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		s := cells[c]
		if n := runeLen(s); n > w {
			s = cut(s, w-1) + "…"
		} else if col.right {
			s = strings.Repeat(" ", w-n) + s
		} else {
			s += strings.Repeat(" ", w-n)
		}
		b.WriteString(s)
	}
	return strings.TrimRight(b.String(), " ")
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }
