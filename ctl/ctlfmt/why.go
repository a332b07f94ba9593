package ctlfmt

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/logs"
)

// WhyLine is the one-line answer of why an instance last ended: "exit 1
// (Error) after 3s at 15:04:05, peak 12Mi", or "never ended".
func WhyLine(w ctl.Why) string {
	r := w.LastRun
	if r == nil {
		return "never ended"
	}
	var b strings.Builder
	switch {
	case r.Signal != "":
		fmt.Fprintf(&b, "status %d (signal %s)", r.Status, r.Signal)
	case r.Status < 0:
		b.WriteString("did not start")
	default:
		fmt.Fprintf(&b, "exit %d", r.Code)
	}
	if r.Reason != "" {
		b.WriteString(", " + r.Reason)
	}
	if r.StartedAt != nil {
		b.WriteString(" after " + Duration(time.Duration(r.DurationMs)*time.Millisecond))
	}
	b.WriteString(" at " + r.EndedAt.Local().Format("15:04:05"))
	if r.PeakMemoryBytes > 0 {
		b.WriteString(", peak " + Bytes(r.PeakMemoryBytes))
	}
	if r.Message != "" {
		b.WriteString(": " + r.Message)
	}
	return oneLine(b.String())
}

// Why writes what `supervisectl why` shows of each instance: its last
// run's end, the run's times, the restarts and backoff now, and the run's
// last lines per stream. On a terminal, the program's bytes that would
// drive it are escaped.
func Why(w io.Writer, ws []ctl.Why, colour, terminal bool) error {
	var b strings.Builder
	for i, x := range ws {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(paint(x.Name, NameColour(x.Name), colour))
		b.WriteString("  " + paint(x.State, stateColour(x.State), colour) + "\n")
		fmt.Fprintf(&b, "  last run:  %s\n", WhyLine(x))
		if r := x.LastRun; r != nil {
			if r.StartedAt != nil {
				fmt.Fprintf(&b, "  ran:       %s → %s\n", r.StartedAt.Local().Format(time.DateTime+".000"), r.EndedAt.Local().Format(time.DateTime+".000"))
			}
		}
		fmt.Fprintf(&b, "  restarts:  %d", x.Restarts)
		if x.BackoffMs > 0 {
			fmt.Fprintf(&b, ", next start in %s", Duration(time.Duration(x.BackoffMs+999)/1000*time.Second))
		}
		b.WriteByte('\n')
		if r := x.LastRun; r != nil {
			tail(&b, "stdout", r.Stdout, colour, terminal)
			tail(&b, "stderr", r.Stderr, colour, terminal)
			if r.Truncated {
				b.WriteString(paint("  (lines were cut or left out to bound the record)", dim, colour) + "\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func tail(b *strings.Builder, stream string, lines []string, colour, terminal bool) {
	if len(lines) == 0 {
		fmt.Fprintf(b, "  %s:    (nothing)\n", stream)
		return
	}
	fmt.Fprintf(b, "  %s, last %d lines:\n", stream, len(lines))
	for _, l := range lines {
		if terminal {
			l = logs.TerminalSafe(l, true)
		}
		b.WriteString(paint("    | ", dim, colour) + l + "\n")
	}
}
