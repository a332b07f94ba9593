//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The scale run (-scale): how each program's cost grows with the fleet.
// supervise runs fleets of every size; the one-supervisor-per-program
// peers run at the sizes they can (runsvdir and svscan stop at 1,000
// service directories), so each ratio comes from the same run.

// baseLabel names the -base build in the scale run.
const baseLabel = "supervise-base"

// errSkip: this peer is not measured at this size.
var errSkip = errors.New("not measured at this size")

// scaleSizes are the fleet sizes of a scale run, and which peers besides
// supervise run at each.
// The largest size is 10,000, or the largest thousand whose pipes (pipes
// per program: 1 with stderr = "stdout", the scale run's setting) fit the
// descriptor limit when it cannot be raised (a container without
// CAP_SYS_RESOURCE).
func scaleSizes(quick bool, nofile uint64, pipes int) []scaleSize {
	if quick {
		return []scaleSize{
			{n: 1000, peers: []string{"s6", "runit"}},
			{n: 4000, peers: []string{"s6"}},
		}
	}
	return []scaleSize{
		{n: 1000, peers: []string{"s6", "runit"}},
		{n: 2000},
		{n: 4000, peers: []string{"s6"}},
		{n: largestFitting(10000, nofile, pipes)},
	}
}

// peersAt are the peers that run n programs: runsvdir and svscan stop at
// 1,000 service directories.
func peersAt(n int) []string {
	if n <= 1000 {
		return []string{"s6", "runit", "daemontools"}
	}
	return []string{"s6"}
}

func largestFitting(n int, nofile uint64, pipes int) int {
	const fixed = 256 // the daemon's own descriptors, with room
	for n > 1000 && uint64(pipes*n+fixed) > nofile {
		n -= 1000
	}
	return n
}

type scaleSize struct {
	n     int
	peers []string // besides supervise
}

func (s scaleSize) runs(p peer) bool {
	return p.name() == "supervise" || p.name() == baseLabel || slices.Contains(s.peers, p.name())
}

// raiseNofile lets every supervisor hold a descriptor or more per
// program at 10,000 programs: children inherit the limit. Go's own
// raising of the soft limit is not passed on to children; this is.
func raiseNofile() (uint64, error) {
	n := uint64(1 << 20)
	if b, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 {
			n = v
		}
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}); err == nil {
		return n, nil
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	lim.Cur = lim.Max
	return lim.Max, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

// scaleSummary prints, per implementation and size, the per-program
// figures: cold start and stop-all in µs per program, status in ms, RSS
// in MiB, and for each size past the first the RSS each added program
// cost (KiB).
func scaleSummary(w io.Writer, rows []Row, sizes []scaleSize) {
	val := func(impl, metric string) float64 {
		for _, r := range rows {
			if r.Impl == impl && r.Metric == metric {
				return r.Value
			}
		}
		return math.NaN()
	}
	load := func(impl, metric string) string {
		for _, r := range rows {
			if r.Impl == impl && r.Metric == metric {
				return r.LoadStart + " → " + r.LoadEnd
			}
		}
		return "?"
	}
	fmt.Fprintln(w, "| impl | N | cold ms | cold µs/prog | stop-all ms | stop µs/prog | status ms | RSS MiB | PSS MiB | RSS KiB/prog added | fds (busiest process) | load (1/5/15 min) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, impl := range []string{"supervise", baseLabel, "s6", "runit", "daemontools"} {
		prevN, prevRSS := 0, math.NaN()
		for _, s := range sizes {
			nstr := fmt.Sprintf("N=%d", s.n)
			cold := val(impl, "cold start until all run, "+nstr)
			if math.IsNaN(cold) {
				continue
			}
			stop := val(impl, "stop-all until every program is gone, "+nstr)
			status := val(impl, "status of every program, "+nstr)
			rss := val(impl, "memory RSS, "+nstr)
			pss := val(impl, "memory PSS, "+nstr)
			added := "—"
			if prevN > 0 && !math.IsNaN(prevRSS) {
				added = fmt.Sprintf("%.1f", (rss-prevRSS)*1024/float64(s.n-prevN))
			}
			fds := val(impl, "descriptors of the busiest supervision process, "+nstr)
			fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.0f | %.0f | %s | %.1f | %.1f | %s | %s | %s |\n", impl, s.n,
				cold, cold*1000/float64(s.n), stop, stop*1000/float64(s.n), fmtNaN(status, "%.1f"), rss, pss, added, fmtNaN(fds, "%.0f"),
				load(impl, "cold start until all run, "+nstr))
			prevN, prevRSS = s.n, rss
		}
	}
	fmt.Fprintln(w)
	// supervise ÷ peer at each size both ran.
	for _, s := range sizes {
		nstr := fmt.Sprintf("N=%d", s.n)
		for _, peer := range append([]string{baseLabel}, s.peers...) {
			var parts []string
			for _, m := range []string{"cold start until all run, ", "stop-all until every program is gone, ", "memory PSS, "} {
				a, b := val("supervise", m+nstr), val(peer, m+nstr)
				if !math.IsNaN(a) && !math.IsNaN(b) && b > 0 {
					parts = append(parts, fmt.Sprintf("%s%.2f", strings.Fields(m)[0]+" ", a/b))
				}
			}
			if len(parts) > 0 {
				fmt.Fprintf(w, "- %s supervise ÷ %s: %s\n", nstr, peer, strings.Join(parts, ", "))
			}
		}
	}
	// Per-program growth of supervise: the largest size against the smallest.
	first, last := sizes[0], sizes[len(sizes)-1]
	for _, impl := range []string{"supervise", baseLabel} {
		if first.n == last.n {
			break
		}
		for _, m := range []string{"cold start until all run, ", "stop-all until every program is gone, "} {
			a, b := val(impl, m+fmt.Sprintf("N=%d", first.n)), val(impl, m+fmt.Sprintf("N=%d", last.n))
			if !math.IsNaN(a) && !math.IsNaN(b) && a > 0 {
				fmt.Fprintf(w, "- %s %s per program at N=%d ÷ at N=%d: %.2f\n", impl, strings.TrimSuffix(m, ", "), last.n, first.n,
					(b/float64(last.n))/(a/float64(first.n)))
			}
		}
	}
}

func fmtNaN(v float64, f string) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf(f, v)
}

// scaleSteps is the fleet at every size, each peer where it runs.
func (r *runner) scaleFleet(p peer, s scaleSize) ([]Row, error) {
	if !s.runs(p) {
		return nil, errSkip
	}
	return r.fleet(p, fleetOpts{n: s.n, settle: 3 * time.Second, oneStream: true, fds: true})
}
