//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Columns of a results TSV, in order. bench/pid1 -tsv writes the same
// columns; keep the two in step.
var Columns = []string{"date", "bench", "metric", "impl", "value", "unit", "better",
	"samples", "load_start", "load_end", "nproc", "kernel", "note"}

// Row is one figure: one metric of one implementation, with the machine
// facts at the time it was measured.
type Row struct {
	Date      string  // the run's start, RFC 3339
	Bench     string  // crash, cold, memory, idle, stop, log, init
	Metric    string  // what the value is, for a person
	Impl      string  // supervise, supervisord, s6, runit, daemontools, tini, dumb-init, none
	Value     float64 // NaN when not measured
	Unit      string
	Better    string // "lower" or "higher"
	Samples   int
	LoadStart string // /proc/loadavg's first three fields when the measurement began
	LoadEnd   string // and when it ended
	Nproc     int
	Kernel    string
	Note      string
}

// Facts are the machine facts every row carries.
type Facts struct {
	Date   string
	Nproc  int
	Kernel string
}

// writeHeader writes the comment lines (key: value) and the column names.
func writeHeader(w io.Writer, comments [][2]string) error {
	for _, c := range comments {
		if _, err := fmt.Fprintf(w, "# %s: %s\n", c[0], clean(c[1])); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, strings.Join(Columns, "\t"))
	return err
}

func writeRow(w io.Writer, r Row) error {
	v := "NaN"
	if r.Value == r.Value {
		v = strconv.FormatFloat(r.Value, 'f', -1, 64)
	}
	f := []string{r.Date, r.Bench, r.Metric, r.Impl, v, r.Unit, r.Better, strconv.Itoa(r.Samples),
		r.LoadStart, r.LoadEnd, strconv.Itoa(r.Nproc), r.Kernel, r.Note}
	for i := range f {
		f[i] = clean(f[i])
	}
	_, err := fmt.Fprintln(w, strings.Join(f, "\t"))
	return err
}

// clean keeps a field on one TSV cell.
func clean(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
}

// readTSV reads rows and "# key: value" comments from a results file.
func readTSV(path string) (rows []Row, comments [][2]string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	header := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "# "):
			k, v, _ := strings.Cut(line[2:], ": ")
			comments = append(comments, [2]string{k, v})
		case !header:
			if line != strings.Join(Columns, "\t") {
				return nil, nil, fmt.Errorf("%s:%d: unexpected columns %q", path, n, line)
			}
			header = true
		default:
			r, err := parseRow(line)
			if err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			rows = append(rows, r)
		}
	}
	return rows, comments, sc.Err()
}

func parseRow(line string) (Row, error) {
	f := strings.Split(line, "\t")
	if len(f) != len(Columns) {
		return Row{}, fmt.Errorf("%d fields, want %d", len(f), len(Columns))
	}
	v, err := strconv.ParseFloat(f[4], 64)
	if err != nil {
		return Row{}, fmt.Errorf("value: %w", err)
	}
	samples, err := strconv.Atoi(f[7])
	if err != nil {
		return Row{}, fmt.Errorf("samples: %w", err)
	}
	nproc, err := strconv.Atoi(f[10])
	if err != nil {
		return Row{}, fmt.Errorf("nproc: %w", err)
	}
	return Row{Date: f[0], Bench: f[1], Metric: f[2], Impl: f[3], Value: v, Unit: f[5], Better: f[6],
		Samples: samples, LoadStart: f[8], LoadEnd: f[9], Nproc: nproc, Kernel: f[11], Note: f[12]}, nil
}
