//go:build linux

// Command peers measures supervise side by side with the supervisors
// people use today (supervisord, s6, runit, daemontools), in one run on
// one machine, and writes the figures as TSV. bench/run drives it; see
// bench/README.md for what each figure means and how it is taken.
//
//	peers -supervise BIN -helper BIN -o OUT.tsv [-quick]
//	peers report -tsv OUT.tsv -md OUT.md IN.tsv...   merge results, print the table
//
// It must run as root: the proc connector, pidfds of other users'
// processes and the peers' defaults all assume it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "report" {
		if err := reportMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "peers report:", err)
			os.Exit(1)
		}
		return
	}
	if err := benchMain(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// runner holds what every benchmark needs.
type runner struct {
	ctx    context.Context
	tmp    string // work directories go under it
	helper string // the helper program (bench/peers/helper)
	sleep  string // /bin/sleep
	facts  Facts
	out    io.Writer // the TSV
	seq    int       // makes markers and work directories unique
	keep   bool      // keep every work directory (-keep)
}

func benchMain(args []string) error {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "the short run: fewer restarts, N=100 only, 10 s idle, 32 MiB of logs")
	sup := fs.String("supervise", "", "the supervise binary (required)")
	helper := fs.String("helper", "", "the helper binary, built from bench/peers/helper (required)")
	out := fs.String("o", "", "write the TSV here (required)")
	only := fs.String("only", "", "comma-separated benches to run: crash,fleet,log (default all)")
	impls := fs.String("impls", "", "comma-separated implementations to run (default all installed)")
	keep := fs.Bool("keep", false, "keep the work directories (configs, logs) and print where they are")
	scale := fs.Bool("scale", false, "the scale run: fleets of 1,000 to 10,000 (quick: 1,000 and 4,000), s6 and runit where they run; prints per-program figures")
	base := fs.String("base", "", "with -scale: another supervise build (an older one) measured at every size in the same run, as "+baseLabel)
	sizesFlag := fs.String("sizes", "", "with -scale: these fleet sizes only (comma-separated), with the peers -impls names that go that far")
	summary := fs.String("summary", "", "with -scale: write the per-program table (markdown) here too")
	work := fs.String("workdir", "", "make the work directories under this directory (default: a new one in $TMPDIR)")
	nFlag := fs.String("n", "", "comma-separated fleet sizes to run, of those the mode has (default all)")
	mibs := fs.String("mib", "", "comma-separated log sizes in MiB to run, of those the mode has (default all)")
	filesOnly := fs.Bool("files-only", false, "log capture: only the files line every peer has (not supervise's console and ready_log_line lines)")
	before := fs.String("before", "", "another supervise binary (an earlier build) measured beside it, as supervise-before: in the TSV, not in the table")
	reps := fs.Int("reps", 0, "repetitions of each fleet and log step, round the peers (default 3; with -scale, runs per size, default 1, the table shows the median)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *sup == "" || *helper == "" || *out == "" {
		return fmt.Errorf("-supervise, -helper and -o are required")
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("run as root (the peers, the proc connector and the pidfds need it)")
	}
	for _, p := range []*string{sup, helper, before} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return err
	}
	// Everything a supervisor leaves behind is re-parented to us, so
	// cleanup finds and reaps it.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming a subreaper: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	tmp, err := os.MkdirTemp(*work, "benchpeers-")
	if err != nil {
		return err
	}
	defer func() {
		killDescendants() // whatever happened, nothing of ours outlives the run
		if *keep {
			fmt.Fprintln(os.Stderr, "peers: work directories kept in", tmp)
		} else {
			os.RemoveAll(tmp)
		}
	}()
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()

	start := time.Now()
	r := &runner{ctx: ctx, tmp: tmp, helper: *helper, sleep: sleep, out: f, keep: *keep,
		facts: Facts{Date: start.UTC().Format(time.RFC3339), Nproc: runtime.NumCPU(), Kernel: kernel()}}
	all := []peer{supervisePeer{bin: *sup}, supervisordPeer{}, s6Peer{helper: *helper}, runitPeer{helper: *helper}, daemontoolsPeer{helper: *helper}}
	if *base != "" {
		abs, err := filepath.Abs(*base)
		if err != nil {
			return err
		}
		all = append([]peer{supervisePeer{bin: abs, label: baseLabel, twoPipes: !mergesStreams(abs)}}, all...)
	}
	if *before != "" {
		all = slices.Insert(all, 1, peer(supervisePeer{bin: *before, label: "supervise-before", twoPipes: !mergesStreams(*before)}))
	}
	var peers []peer
	var skipped []string
	for _, p := range all {
		if *impls != "" && !inList(*impls, p.name()) && p.name() != baseLabel {
			continue
		}
		if missing := missingBin(p.needs()); missing != "" {
			skipped = append(skipped, p.name()+" ("+missing+" not found)")
			continue
		}
		peers = append(peers, p)
	}
	mode := "full"
	if *quick {
		mode = "quick"
	}
	comments := [][2]string{
		{"date", r.facts.Date}, {"mode", mode}, {"nproc", strconv.Itoa(r.facts.Nproc)},
		{"kernel", r.facts.Kernel}, {"cpu", cpuModel()}, {"loadavg_start", loadavg()},
		{"versions", versions()},
	}
	if len(skipped) > 0 {
		comments = append(comments, [2]string{"skipped", strings.Join(skipped, ", ")})
	}
	if err := writeHeader(f, comments); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "peers: %s run, %d CPUs, kernel %s, load %s; %d implementations\n", mode, r.facts.Nproc, r.facts.Kernel, loadavg(), len(peers))

	// A step runs once per peer per repetition. Repetitions go round the
	// peers (A B C, A B C …) so that a drift of the machine's load spreads
	// over all columns; the figures of one line are the median of its runs.
	type step struct {
		bench string
		reps  int
		size  int     // the fleet's N, or the log's MiB
		mode  logMode // a log step's
		f     func(p peer, rep int) ([]Row, error)
	}
	fleet := func(n int, settle, idle time.Duration) step {
		return step{"fleet", 3, n, "", func(p peer, rep int) ([]Row, error) {
			return r.fleet(p, fleetOpts{n: n, settle: settle, idle: idleOnce(rep, idle)})
		}}
	}
	logs := func(mib int, mode logMode) step {
		return step{"log", 3, mib, mode, func(p peer, _ int) ([]Row, error) { return r.logs(p, int64(mib)<<20, mode) }}
	}
	var steps []step
	var sizes []scaleSize
	var nofile uint64
	pipes := 1 // pipe descriptors per program in the scale run
	if *scale {
		var err error
		nofile, err = raiseNofile()
		if err != nil {
			return fmt.Errorf("raising the descriptor limit for 10,000 programs: %w", err)
		}
		// Each program's stderr goes into its stdout pipe (stderr =
		// "stdout"): one descriptor per program, so 10,000 fit a hard
		// limit of 20,000; a build without the setting needs two.
		for _, p := range peers {
			if sp, ok := p.(supervisePeer); ok && sp.twoPipes {
				pipes = 2
				fmt.Fprintf(os.Stderr, "peers: %s has no stderr = \"stdout\": its programs get two pipes each\n", sp.name())
			}
		}
		fmt.Fprintf(os.Stderr, "peers: supervise's programs have stderr = \"stdout\": %d pipe descriptor(s) per program, descriptor limit %d\n", pipes, nofile)
		sizes = scaleSizes(*quick, nofile, pipes)
		if *sizesFlag != "" {
			sizes = nil
			for _, f := range strings.Split(*sizesFlag, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || n < 1 {
					return fmt.Errorf("-sizes: %q is not a fleet size", f)
				}
				sizes = append(sizes, scaleSize{n: n, peers: peersAt(n)})
			}
		}
		if last := sizes[len(sizes)-1].n; !*quick && last < 10000 {
			fmt.Fprintf(os.Stderr, "peers: the descriptor limit is %d and cannot be raised: the largest fleet is %d (%d pipe descriptors per program)\n", nofile, last, pipes)
		}
		for _, sz := range sizes {
			steps = append(steps, step{"fleet", max(*reps, 1), sz.n, "", func(p peer, _ int) ([]Row, error) { return r.scaleFleet(p, sz) }})
		}
	} else if *quick {
		steps = []step{
			{"crash", 1, 0, "", func(p peer, _ int) ([]Row, error) { return r.crash(p, 30, 10*time.Second) }},
			fleet(100, time.Second, 10*time.Second),
			logs(32, logFileOnly), logs(32, logConsole), logs(32, logReady),
		}
	} else {
		steps = []step{
			{"crash", 1, 0, "", func(p peer, _ int) ([]Row, error) { return r.crash(p, 100, 150*time.Second) }},
			fleet(1, time.Second, 0), fleet(10, time.Second, 0), fleet(100, time.Second, 0),
			fleet(1000, 3*time.Second, 30*time.Second),
			logs(32, logFileOnly), logs(256, logFileOnly), logs(256, logConsole), logs(256, logReady),
		}
	}
	// -n, -mib, -files-only and -reps pick a part of the run: the lines
	// a change is about, measured side by side as often as wanted.
	selected := steps[:0]
	for _, s := range steps {
		switch {
		case s.bench == "fleet" && *nFlag != "" && !inList(*nFlag, strconv.Itoa(s.size)),
			s.bench == "log" && *mibs != "" && !inList(*mibs, strconv.Itoa(s.size)),
			s.bench == "log" && *filesOnly && s.mode != logFileOnly:
			continue
		}
		if *reps > 0 && s.bench != "crash" {
			s.reps = *reps
		}
		selected = append(selected, s)
	}
	steps = selected
	failed := 0
	var written []Row
	for _, s := range steps {
		if *only != "" && !inList(*only, s.bench) {
			continue
		}
		var runs [][]Row
		for rep := range s.reps {
			for _, p := range peers {
				if err := ctx.Err(); err != nil {
					return err
				}
				load0 := loadavg()
				rows, err := s.f(p, rep)
				load1 := loadavg()
				if errors.Is(err, errSkip) {
					continue
				}
				if err != nil {
					failed++
					fmt.Fprintf(os.Stderr, "peers: %s, %s: %v\n", s.bench, p.name(), err)
					rows = append(rows, Row{Bench: s.bench, Metric: s.bench + " failed", Value: math.NaN(), Note: firstLine(err.Error())})
				}
				for i := range rows {
					rows[i].Date, rows[i].Impl, rows[i].Nproc, rows[i].Kernel = r.facts.Date, p.name(), r.facts.Nproc, r.facts.Kernel
					rows[i].LoadStart, rows[i].LoadEnd = load0, load1
					fmt.Fprintf(os.Stderr, "  %-12s %-58s %12s %s\n", p.name(), rows[i].Metric, formatValue(rows[i].Value), rows[i].Unit)
				}
				runs = append(runs, rows)
			}
		}
		for _, row := range aggregate(runs) {
			if err := writeRow(f, row); err != nil {
				return err
			}
			written = append(written, row)
		}
	}
	if *scale {
		scaleSummary(os.Stderr, written, sizes)
		if *summary != "" {
			var b strings.Builder
			fmt.Fprintf(&b, "# supervise at scale: %s run, %s\n\n%d CPUs (%s), kernel %s; load average %s at the start, %s at the end.\n\n",
				mode, r.facts.Date, r.facts.Nproc, cpuModel(), r.facts.Kernel, comments[5][1], loadavg())
			fmt.Fprintf(&b, "Each program of supervise's fleet has stderr = \"stdout\": one pipe for both streams, so supervise holds %d pipe descriptor(s) per program; descriptor limit %d.\n\n", pipes, nofile)
			scaleSummary(&b, written, sizes)
			if err := os.WriteFile(*summary, []byte(b.String()), 0o644); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(os.Stderr, "peers: done in %v, load %s\n", time.Since(start).Round(time.Second), loadavg())
	if failed > 0 {
		return fmt.Errorf("%d measurements failed (see above; their rows say so)", failed)
	}
	return nil
}

// idleOnce measures idle cost in the first repetition only: it is a long
// wait, and a cost of nothing happening varies little.
func idleOnce(rep int, d time.Duration) time.Duration {
	if rep > 0 {
		return 0
	}
	return d
}

// workdir makes a fresh directory for one measurement.
func (r *runner) workdir(name string) (string, error) {
	r.seq++
	dir := filepath.Join(r.tmp, fmt.Sprintf("%02d-%s", r.seq, name))
	return dir, os.Mkdir(dir, 0o755)
}

// marker is the argument of this measurement's sleep programs: a number
// nothing else on the machine sleeps for, which tells ours from others.
func (r *runner) marker() string {
	r.seq++
	return strconv.Itoa(86_400_000 + os.Getpid()%10_000*100 + r.seq)
}

func inList(list, name string) bool {
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == name {
			return true
		}
	}
	return false
}

func missingBin(bins []string) string {
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			return b
		}
	}
	return ""
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func kernel() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// versions of the Debian packages measured, as dpkg knows them.
func versions() string {
	var out []string
	for _, pkg := range []string{"supervisor", "s6", "runit", "daemontools", "tini", "dumb-init"} {
		v, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", pkg).Output()
		if err == nil && len(v) > 0 {
			out = append(out, pkg+" "+string(v))
		}
	}
	return strings.Join(out, ", ")
}
