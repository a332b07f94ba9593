//go:build linux

package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// columns of the Markdown table, in order; the baselines go into the
// notes.
var tableImpls = []string{"supervise", "supervise-init", "supervisord", "s6", "runit", "daemontools", "tini", "dumb-init"}

// baselines are measured beside the implementations to say what part of a
// figure is not theirs: what each is, in the order the notes give them.
var baselines = []struct{ impl, what string }{
	{"none", "the command without an init"},
	{"go-floor", "the Go floor (bench/pid1/floor: a Go program that forks, execs and waits, nothing else)"},
	{"go-floor-notify", "the Go floor taking every signal through os/signal and forwarding it"},
	{"go-floor-linked", "the Go floor carrying the code supervise-init's init reaches, running none of it (what the larger binary and its packages' initialisation cost a start)"},
}

// ours are the columns of supervise's own binaries; the others are peers.
const ours = 2

// reportMain merges result files into one TSV and renders the Markdown
// table, which it also prints.
func reportMain(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	tsv := fs.String("tsv", "", "write the merged TSV here")
	md := fs.String("md", "", "write the Markdown table here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("no input files")
	}
	var rows []Row
	var comments [][2]string
	for i, in := range fs.Args() {
		r, c, err := readTSV(in)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
		if i == 0 {
			comments = c // the machine facts come from the main run
		}
	}
	if len(rows) > 0 {
		comments = setComment(comments, "loadavg_end", rows[len(rows)-1].LoadEnd)
	}
	if *tsv != "" {
		var b strings.Builder
		if err := writeHeader(&b, comments); err != nil {
			return err
		}
		for _, r := range rows {
			if err := writeRow(&b, r); err != nil {
				return err
			}
		}
		if err := os.WriteFile(*tsv, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	var b strings.Builder
	renderMarkdown(&b, rows, comments)
	if *md != "" {
		if err := os.WriteFile(*md, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	_, err := io.WriteString(os.Stdout, b.String())
	return err
}

func setComment(c [][2]string, k, v string) [][2]string {
	for i := range c {
		if c[i][0] == k {
			c[i][1] = v
			return c
		}
	}
	return append(c, [2]string{k, v})
}

func comment(c [][2]string, k string) string {
	for _, kv := range c {
		if kv[0] == k {
			return kv[1]
		}
	}
	return "?"
}

// line is one row of the table: one metric across implementations.
type line struct {
	metric, unit, better string
	by                   map[string]Row
	first, last          Row // measured first and last, for the load column
}

func renderMarkdown(w io.Writer, rows []Row, c [][2]string) {
	var lines []*line
	index := map[string]*line{}
	var failures []Row
	for _, r := range rows {
		if math.IsNaN(r.Value) && strings.HasSuffix(r.Metric, " failed") {
			failures = append(failures, r)
			continue
		}
		l := index[r.Metric]
		if l == nil {
			l = &line{metric: r.Metric, unit: r.Unit, better: r.Better, by: map[string]Row{}, first: r}
			index[r.Metric] = l
			lines = append(lines, l)
		}
		l.by[r.Impl] = r
		l.last = r
	}
	// Only the implementations that have a figure get a column.
	var impls []string
	for _, im := range tableImpls {
		for _, l := range lines {
			if _, ok := l.by[im]; ok {
				impls = append(impls, im)
				break
			}
		}
	}

	fmt.Fprintf(w, "# supervise and its peers: %s run, %s\n\n", comment(c, "mode"), comment(c, "date"))
	fmt.Fprintf(w, "%s CPUs (%s), kernel %s; load average %s at the start, %s at the end.  \n",
		comment(c, "nproc"), comment(c, "cpu"), comment(c, "kernel"), comment(c, "loadavg_start"), comment(c, "loadavg_end"))
	fmt.Fprintf(w, "Peers: %s.", comment(c, "versions"))
	if s := comment(c, "skipped"); s != "?" {
		fmt.Fprintf(w, " Not measured: %s.", s)
	}
	fmt.Fprintf(w, "\n\nEach line: every implementation's figure, the best peer's, and supervise ÷ best peer "+
		"(for ↓ lines below 1 means supervise is better, for ↑ lines above 1). "+
		"The load column is the 1-minute load average when the line's first figure was taken → when its last was. "+
		"Lines measured in several runs show the median; every run's figure is in the TSV's note column. "+
		"How each figure is taken: bench/README.md.\n\n")

	fmt.Fprintf(w, "| measure | unit | %s | best peer | supervise ÷ best | load |\n", strings.Join(impls, " | "))
	fmt.Fprintf(w, "|---|---|%s---|---:|---|\n", strings.Repeat("---:|", len(impls)))
	for _, l := range lines {
		arrow := "↓"
		if l.better == "higher" {
			arrow = "↑"
		}
		cells := make([]string, len(impls))
		for i, im := range impls {
			cells[i] = "—"
			if r, ok := l.by[im]; ok {
				cells[i] = formatValue(r.Value)
			}
		}
		bestName, best, ok := bestPeer(l)
		bestCell, ratio := "—", "—"
		if ok {
			bestCell = fmt.Sprintf("%s (%s)", formatValue(best), bestName)
			if s, has := l.by["supervise"]; has && !math.IsNaN(s.Value) {
				ratio = formatRatio(s.Value, best)
			}
			if s, has := l.by["supervise-init"]; has && !math.IsNaN(s.Value) {
				ratio += " · supervise-init " + formatRatio(s.Value, best)
			}
		}
		fmt.Fprintf(w, "| %s %s | %s | %s | %s | %s | %s → %s |\n", l.metric, arrow, l.unit, strings.Join(cells, " | "),
			bestCell, ratio, load1(l.first.LoadStart), load1(l.last.LoadEnd))
	}

	// Notes: per benchmark, how each implementation was set up and how
	// many samples its figures have; the baseline's own figures.
	fmt.Fprintf(w, "\nNotes:\n\n")
	var benches []string
	for _, r := range rows {
		if !slices.Contains(benches, r.Bench) {
			benches = append(benches, r.Bench)
		}
	}
	for _, b := range benches {
		var parts []string
		for _, im := range tableImpls {
			var notes []string
			samples := 0
			for _, r := range rows {
				if r.Bench != b || r.Impl != im || math.IsNaN(r.Value) && strings.HasSuffix(r.Metric, " failed") {
					continue
				}
				// Each run's figure of a repeated measure stays in the TSV.
				note, _, repeated := strings.Cut(r.Note, "median of ")
				note = strings.TrimSuffix(note, "; ")
				if note != "" && !slices.Contains(notes, note) {
					notes = append(notes, note)
				}
				if !repeated {
					samples = max(samples, r.Samples)
				}
			}
			if samples > 1 {
				notes = append(notes, fmt.Sprintf("%d samples", samples))
			}
			if len(notes) > 0 {
				parts = append(parts, im+": "+strings.Join(notes, "; "))
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "- %s — %s\n", b, strings.Join(parts, " · "))
		}
		for _, bl := range baselines {
			var figs []string
			for _, r := range rows {
				if r.Bench == b && r.Impl == bl.impl && !math.IsNaN(r.Value) {
					figs = append(figs, fmt.Sprintf("%s %s %s", r.Metric, formatValue(r.Value), r.Unit))
				}
			}
			if len(figs) > 0 {
				fmt.Fprintf(w, "- %s — baseline, %s: %s\n", b, bl.what, strings.Join(figs, "; "))
			}
		}
	}
	for _, r := range failures {
		fmt.Fprintf(w, "- FAILED: %s, %s: %s\n", r.Bench, r.Impl, r.Note)
	}
}

// bestPeer is the best figure of the line among the peers (not supervise's
// own binaries, not the baseline).
func bestPeer(l *line) (string, float64, bool) {
	name, best, ok := "", 0.0, false
	for _, im := range tableImpls[ours:] {
		r, has := l.by[im]
		if !has || math.IsNaN(r.Value) {
			continue
		}
		if !ok || l.better == "higher" && r.Value > best || l.better != "higher" && r.Value < best {
			name, best, ok = im, r.Value, true
		}
	}
	return name, best, ok
}

func formatRatio(v, best float64) string {
	switch {
	case best == 0 && v == 0:
		return "1.00"
	case best == 0:
		return "∞"
	}
	switch q := v / best; {
	case q < 0.1:
		return strconv.FormatFloat(q, 'g', 2, 64)
	case q >= 100:
		return strconv.FormatFloat(q, 'f', 0, 64)
	default:
		return strconv.FormatFloat(q, 'f', 2, 64)
	}
}

func load1(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// formatValue prints about three significant digits.
func formatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "failed"
	case v == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}
