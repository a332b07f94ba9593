// Package ctlfmt renders control replies for people: the status table,
// log lines and events as supervisectl prints them.
package ctlfmt

import (
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/logs"
)

// ANSI colours; used only when the caller says the output is a terminal.
const (
	reset  = "\x1b[0m"
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	dim    = "\x1b[2m"
	bold   = "\x1b[1m"
)

// nameColours cycle over program names in logs, as foreman does.
var nameColours = []string{"\x1b[36m", "\x1b[33m", "\x1b[32m", "\x1b[35m", "\x1b[34m", "\x1b[96m", "\x1b[93m", "\x1b[92m", "\x1b[95m", "\x1b[94m"}

func paint(s, colour string, on bool) string {
	if !on || colour == "" {
		return s
	}
	return colour + s + reset
}

// stateColour is green for running, red for broken, yellow for on the way,
// dim for down on purpose.
func stateColour(state string) string {
	switch state {
	case "Running":
		return green
	case "CrashLoopBackOff", "Failed", "Error", "OOMKilled", "Fatal", "Backoff":
		return red
	case "Starting", "Stopping", "Waiting", "Pending", "Created":
		return yellow
	case "Stopped", "Completed", "Exited":
		return dim
	}
	return ""
}

// State is the STATE column: "Running", "Running (not ready)",
// "CrashLoopBackOff (next start in 40s)".
func State(st ctl.ProgramStatus) string {
	s := st.State
	switch {
	case st.NextStartInMs > 0:
		// Round up: "in 0s" would read as "now" while it is still waiting.
		s += " (next start in " + Duration(time.Duration(st.NextStartInMs+999)/1000*time.Second) + ")"
	case st.Ready != nil && !*st.Ready && st.State == "Running":
		s += " (not ready)"
	case st.NextRunInMs > 0:
		// A scheduled program between its runs (or in one).
		s += " (next run in " + Duration(time.Duration(st.NextRunInMs+999)/1000*time.Second) + ")"
	}
	return s
}

// LastExit is the LAST EXIT column: "exit 1", "exit 137 (SIGKILL)", or
// the reason when it says more than the status ("OOMKilled",
// "StartError", "LivenessProbeFailed"); "-" when it never ended.
func LastExit(e *ctl.ExitInfo) string {
	switch {
	case e == nil:
		return "-"
	case e.Reason != "" && e.Reason != "Completed" && e.Reason != "Error" && e.Reason != "Signaled":
		return e.Reason
	case e.Signal != "" && e.Code > 128:
		return "exit " + strconv.Itoa(e.Code) + " (SIG" + e.Signal + ")"
	case e.Signal != "":
		return "signal " + e.Signal // a server from before 128+N
	}
	return "exit " + strconv.Itoa(e.Code)
}

// Duration is short and rounded, as kubectl prints ages: "40s", "3m5s",
// "2h15m", "3d4h".
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		if s%60 == 0 {
			return fmt.Sprintf("%dm", s/60)
		}
		return fmt.Sprintf("%dm%ds", s/60, s%60)
	case s < 86400:
		if m := s % 3600 / 60; m != 0 {
			return fmt.Sprintf("%dh%dm", s/3600, m)
		}
		return fmt.Sprintf("%dh", s/3600)
	}
	if h := s % 86400 / 3600; h != 0 {
		return fmt.Sprintf("%dd%dh", s/86400, h)
	}
	return fmt.Sprintf("%dd", s/86400)
}

// Bytes is a size in binary units: "512B", "9.5Mi", "256Mi", "1.2Gi".
func Bytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%dB", max(n, 0))
	}
	v, unit := float64(n), ""
	for _, u := range []string{"Ki", "Mi", "Gi", "Ti", "Pi"} {
		v /= 1024
		unit = u
		if v < 1024 {
			break
		}
	}
	if v < 10 {
		return strconv.FormatFloat(math.Floor(v*10)/10, 'f', -1, 64) + unit
	}
	return strconv.FormatFloat(math.Floor(v), 'f', 0, 64) + unit
}

// CPU is CPU time: "0.42s", "3m5s".
func CPU(sec float64) string {
	if sec < 60 {
		return strconv.FormatFloat(sec, 'f', 2, 64) + "s"
	}
	return Duration(time.Duration(sec * float64(time.Second)))
}

// NoInstances names those of names (programs, instances, or "all") that
// match no row of sts: the supervisor knew them, so they are programs
// scaled to 0.
func NoInstances(names []string, sts []ctl.ProgramStatus) []string {
	var none []string
	for _, n := range names {
		if n == "all" {
			continue
		}
		found := false
		for _, st := range sts {
			if st.Name == n || strings.HasPrefix(st.Name, n+":") {
				found = true
				break
			}
		}
		if !found {
			none = append(none, n)
		}
	}
	return none
}

// StatusTable writes the status as an aligned table. now is when the
// uptimes end; colour paints the states.
func StatusTable(w io.Writer, sts []ctl.ProgramStatus, now time.Time, colour bool) error {
	header := []string{"NAME", "STATE", "PID", "UPTIME", "RESTARTS", "LAST EXIT", "MEM", "CPU"}
	withMsg := false
	for _, st := range sts {
		withMsg = withMsg || st.Message != ""
	}
	if withMsg {
		header = append(header, "MESSAGE")
	}
	rows := [][]string{header}
	for _, st := range sts {
		pid, uptime, mem, cpu := "-", "-", "-", "-"
		if st.Pid > 0 {
			pid = strconv.Itoa(st.Pid)
			if st.StartedAt != nil {
				uptime = Duration(now.Sub(*st.StartedAt))
			}
		}
		if st.Pid > 0 || st.MemoryBytes > 0 {
			mem = Bytes(st.MemoryBytes)
		}
		if st.Pid > 0 || st.CPUSeconds > 0 {
			cpu = CPU(st.CPUSeconds)
		}
		row := []string{st.Name, State(st), pid, uptime, strconv.Itoa(st.Restarts), LastExit(st.LastExit), mem, cpu}
		if withMsg {
			row = append(row, oneLine(st.Message))
		}
		rows = append(rows, row)
	}
	widths := make([]int, len(header))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for ri, r := range rows {
		var line strings.Builder
		for i, c := range r {
			// Pad the plain text, then paint: escapes take no columns.
			cell := c
			if i < len(r)-1 {
				cell += strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2)
			}
			if ri > 0 && i == 1 {
				cell = paint(cell, stateColour(sts[ri-1].State), colour)
			}
			line.WriteString(cell)
		}
		text := strings.TrimRight(line.String(), " ")
		if ri == 0 {
			text = paint(text, bold, colour)
		}
		b.WriteString(text)
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// oneLine makes a message from a program (sd_notify STATUS=, an exit
// message) one line of safe text for a table: whitespace runs become one
// space, and what a terminal would act on (ESC and the other controls) is
// shown escaped, wherever the table goes.
func oneLine(s string) string {
	return logs.TerminalSafe(strings.Join(strings.Fields(s), " "), false)
}

// NameColour is the colour of a program's name in logs: stable per name.
func NameColour(name string) string {
	// Instances ("web:1") and a job's runs ("job#1") share their
	// program's colour.
	base := name[:strings.IndexAny(name+":", ":#")]
	h := fnv.New32a()
	h.Write([]byte(base))
	return nameColours[h.Sum32()%uint32(len(nameColours))]
}

// LogLine writes "web | text" as the supervisor's console does, padding
// the name to width. The marker of lines lost to a slow reader is dimmed.
// On a terminal the program's bytes that would drive it are escaped
// (colours kept); to a pipe or a file they go as they are, as cat does.
func LogLine(w io.Writer, l logs.Line, width int, colour, terminal bool) error {
	name := l.Program + strings.Repeat(" ", max(width-utf8.RuneCountInString(l.Program), 0))
	text := l.Text
	if terminal {
		text = logs.TerminalSafe(text, true)
	}
	if l.Stream == logs.StreamLagged {
		text = paint(text, dim, colour)
	}
	_, err := io.WriteString(w, paint(name+" | ", NameColour(l.Program), colour)+text+"\n")
	return err
}

// Event writes "15:04:05.000 web Running → Exited  message".
func Event(w io.Writer, ev ctl.Event, colour bool) error {
	var b strings.Builder
	b.WriteString(paint(ev.Time.Local().Format("2006-01-02 15:04:05.000"), dim, colour))
	b.WriteString("  ")
	b.WriteString(ev.Program)
	b.WriteString("  ")
	if ev.From != "" {
		b.WriteString(paint(ev.From, stateColour(ev.From), colour))
		b.WriteString(" → ")
	}
	b.WriteString(paint(ev.To, stateColour(ev.To), colour))
	if ev.Message != "" {
		b.WriteString("  ")
		b.WriteString(oneLine(ev.Message))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}
