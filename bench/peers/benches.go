//go:build linux

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// sleepCtx waits d unless ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// percentile is the nearest-rank percentile of s.
func percentile(s []time.Duration, p float64) time.Duration {
	c := slices.Clone(s)
	slices.Sort(c)
	i := int(math.Ceil(p/100*float64(len(c)))) - 1
	return c[max(i, 0)]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// ---- 1. crash → next start

// crash runs a program that exits 1 at once and measures, from the
// program's own timestamps, the delay from one run's exit to the next
// run's start, for up to restarts restarts or until budget has passed.
func (r *runner) crash(p peer, restarts int, budget time.Duration) ([]Row, error) {
	dir, err := r.workdir("crash-" + p.name())
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "t")
	progs := []program{{name: "crash", argv: []string{r.helper, "crash", file}, crash: true}}
	t, err := launch(p, dir, progs, nil)
	if err != nil {
		return nil, err
	}
	defer func() { p.shutdown(t, progs); t.close() }()
	deadline := time.Now().Add(budget)
	for {
		if delays, _ := crashDelays(file); len(delays) >= restarts || time.Now().After(deadline) {
			break
		}
		if !t.alive() {
			return nil, errorf(t, "exited during the crash loop")
		}
		if err := sleepCtx(r.ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
	delays, err := crashDelays(file)
	if err != nil {
		return nil, err
	}
	if len(delays) == 0 {
		return nil, errorf(t, "no restart within %v", budget)
	}
	delays = delays[:min(len(delays), restarts)]
	note := p.crashNote()
	return []Row{
		{Bench: "crash", Metric: "crash → next start, median", Value: ms(percentile(delays, 50)), Unit: "ms", Better: "lower", Samples: len(delays), Note: note},
		{Bench: "crash", Metric: "crash → next start, p99", Value: ms(percentile(delays, 99)), Unit: "ms", Better: "lower", Samples: len(delays), Note: note},
	}, nil
}

// crashDelays reads the helper's "s NS" / "e NS" lines: each start that
// follows an exit gives one delay.
func crashDelays(file string) ([]time.Duration, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var delays []time.Duration
	var exited int64
	for _, l := range strings.Split(string(b), "\n") {
		kind, v, ok := strings.Cut(l, " ")
		if !ok {
			continue // the last, partly written line
		}
		ns, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		switch kind {
		case "e":
			exited = ns
		case "s":
			if exited != 0 {
				delays = append(delays, time.Duration(ns-exited))
			}
			exited = 0
		}
	}
	return delays, nil
}

// ---- 2-5. a fleet of n sleep programs: cold start, memory, idle, stop-all

type fleetOpts struct {
	n      int
	settle time.Duration // after all run, before memory and idle are read
	idle   time.Duration // 0: no idle measurement
	// oneStream: each program's stderr into its stdout pipe, where the
	// supervisor has the setting (supervise's stderr = "stdout").
	oneStream bool
	// fds: also count the supervision's open descriptors.
	fds bool
}

func (r *runner) fleet(p peer, o fleetOpts) ([]Row, error) {
	dir, err := r.workdir(fmt.Sprintf("fleet%d-%s", o.n, p.name()))
	if err != nil {
		return nil, err
	}
	marker := r.marker()
	progs := make([]program, o.n)
	for i := range progs {
		progs[i] = program{name: fmt.Sprintf("p%04d", i), argv: []string{r.sleep, marker}, oneStream: o.oneStream}
	}
	w, werr := watchExecs(marker)
	if werr != nil {
		fmt.Fprintf(os.Stderr, "peers: %v; cold start falls back to polling /proc\n", werr)
	}
	var t0 time.Duration
	t, err := launch(p, dir, progs, &t0)
	if err != nil {
		if w != nil {
			w.Close()
		}
		return nil, err
	}
	defer func() { p.shutdown(t, progs); t.close() }()

	cold, how, err := r.waitAllRun(t, w, marker, o.n, t0)
	if w != nil {
		w.Close()
	}
	if err != nil {
		return nil, err
	}
	nstr := fmt.Sprintf("N=%d", o.n)
	rows := []Row{{Bench: "cold", Metric: "cold start until all run, " + nstr, Value: ms(cold), Unit: "ms", Better: "lower", Samples: 1,
		Note: nstr + ": " + how}}

	if err := sleepCtx(r.ctx, o.settle); err != nil {
		return rows, err
	}
	all, err := listProcs()
	if err != nil {
		return rows, err
	}
	sup, programs := split(descendants(all, t.pid), marker)
	if len(programs) != o.n {
		return rows, errorf(t, "%d of %d programs run after start-up", len(programs), o.n)
	}
	rss, pss, err := memory(sup)
	if err != nil {
		return rows, err
	}
	pnote := fmt.Sprintf("%s: %s", nstr, processes(len(sup)))
	rows = append(rows,
		Row{Bench: "memory", Metric: "memory RSS, " + nstr, Value: float64(rss) / 1024, Unit: "MiB", Better: "lower", Samples: 1, Note: pnote},
		Row{Bench: "memory", Metric: "memory PSS, " + nstr, Value: float64(pss) / 1024, Unit: "MiB", Better: "lower", Samples: 1, Note: pnote})
	if o.fds {
		most, err := mostDescriptors(sup)
		if err != nil {
			return rows, err
		}
		rows = append(rows, Row{Bench: "fds", Metric: "descriptors of the busiest supervision process, " + nstr, Value: float64(most), Unit: "fds", Better: "lower", Samples: 1, Note: pnote})
	}
	if row, err := r.status(p, t, progs, nstr); err != nil {
		return rows, err
	} else if row != nil {
		rows = append(rows, *row)
		// Again once the status calls ran: what serving them mapped
		// stays resident.
		_, pss, err := memory(sup)
		if err != nil {
			return rows, err
		}
		rows = append(rows, Row{Bench: "memory", Metric: "memory PSS after the status calls, " + nstr, Value: float64(pss) / 1024, Unit: "MiB", Better: "lower", Samples: 1, Note: pnote})
	}

	if o.idle > 0 {
		before := usageOf(sup)
		if err := sleepCtx(r.ctx, o.idle); err != nil {
			return rows, err
		}
		d := usageDelta(before, usageOf(sup))
		span := fmt.Sprintf("%s, %v idle", nstr, o.idle)
		note := fmt.Sprintf("%s: %s", nstr, processes(d.procs))
		rows = append(rows,
			Row{Bench: "idle", Metric: "idle CPU utime+stime, " + span, Value: ms(d.cpu), Unit: "ms", Better: "lower", Samples: 1, Note: note},
			Row{Bench: "idle", Metric: "idle CPU on-CPU time (schedstat), " + span, Value: ms(d.run), Unit: "ms", Better: "lower", Samples: 1, Note: note},
			Row{Bench: "idle", Metric: "idle context switches, " + span, Value: float64(d.ctxsw), Unit: "switches", Better: "lower", Samples: 1, Note: note})
	}

	took, left, err := waitGone(programs, func() error { return p.stopAll(t, progs) }, 2*time.Minute)
	if err != nil {
		return rows, err
	}
	row := Row{Bench: "stop", Metric: "stop-all until every program is gone, " + nstr, Value: ms(took), Unit: "ms", Better: "lower", Samples: 1, Note: stopNote(p)}
	if left > 0 {
		row.Value = math.NaN()
		row.Note = fmt.Sprintf("%d of %d programs still ran after 2 min", left, o.n)
	}
	return append(rows, row), nil
}

func processes(n int) string {
	if n == 1 {
		return "1 supervision process"
	}
	return fmt.Sprintf("%d supervision processes", n)
}

func stopNote(p peer) string {
	switch p.(type) {
	case supervisePeer, supervisordPeer:
		return "SIGTERM to the supervisor"
	case s6Peer:
		return "s6-svscanctl -t"
	case runitPeer:
		return "sv down on every service"
	case daemontoolsPeer:
		return "svc -d on every service"
	}
	return ""
}

// waitAllRun waits until n programs have exec'd and returns the time from
// t0 to the last exec. With the proc connector the time is the kernel's
// exec timestamp; without it (or if it dropped events) /proc is polled
// every 20 ms and the time is when the poll saw them all.
func (r *runner) waitAllRun(t *tree, w *execWatch, marker string, n int, t0 time.Duration) (time.Duration, string, error) {
	deadline := time.Now().Add(5*time.Minute + time.Duration(n)*100*time.Millisecond)
	lastPoll := time.Time{}
	for {
		poll := w == nil
		if w != nil {
			got, last, lost, err := w.count()
			if err != nil {
				return 0, "", fmt.Errorf("proc connector: %w", err)
			}
			if got >= n {
				ts := w.times()
				return last - t0, fmt.Sprintf("first program ran at %.0f ms, half at %.0f ms",
					ms(ts[0]-t0), ms(ts[len(ts)/2]-t0)), nil
			}
			poll = lost
		}
		// Polling: the fallback, or the connector dropped events.
		if poll && time.Since(lastPoll) >= 20*time.Millisecond {
			lastPoll = time.Now()
			now := monotonic()
			all, err := listProcs()
			if err != nil {
				return 0, "", err
			}
			if _, programs := split(descendants(all, t.pid), marker); len(programs) >= n {
				return now - t0, "time from polling /proc every 20 ms (no kernel exec events)", nil
			}
		}
		if !t.alive() {
			return 0, "", errorf(t, "exited while starting")
		}
		if time.Now().After(deadline) {
			got := 0
			if w != nil {
				got, _, _, _ = w.count()
			}
			return 0, "", errorf(t, "only %d of %d programs started", got, n)
		}
		if err := sleepCtx(r.ctx, 5*time.Millisecond); err != nil {
			return 0, "", err
		}
	}
}

// waitGone opens a pidfd on each program, calls stop, and waits until
// every program has exited. It returns the time from just before stop to
// the last exit seen, and how many still ran at the timeout.
func waitGone(progs []procEntry, stop func() error, timeout time.Duration) (time.Duration, int, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(ep)
	open := 0
	fds := map[int32]bool{} // registered and not fired yet
	defer func() {
		for fd := range fds {
			unix.Close(int(fd))
		}
	}()
	for _, p := range progs {
		fd, err := unix.PidfdOpen(p.Pid, 0)
		if err != nil {
			continue // already gone
		}
		if st, err := readStat(p.Pid); err != nil || st.Start != p.Start {
			unix.Close(fd)
			continue
		}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			unix.Close(fd)
			return 0, 0, err
		}
		fds[int32(fd)] = true
		open++
	}
	t0 := monotonic()
	if err := stop(); err != nil {
		return 0, 0, err
	}
	var last time.Duration
	events := make([]unix.EpollEvent, 128)
	deadline := time.Now().Add(timeout)
	for len(fds) > 0 && time.Now().Before(deadline) {
		n, err := unix.EpollWait(ep, events, int(time.Until(deadline)/time.Millisecond)+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		now := monotonic()
		for _, e := range events[:n] {
			_ = unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, int(e.Fd), nil)
			unix.Close(int(e.Fd))
			delete(fds, e.Fd)
			last = now
		}
	}
	if open == 0 {
		return 0, 0, nil
	}
	return last - t0, len(fds), nil
}

// ---- 6. log capture

// logMode is what else a supervisor does with the output it captures to
// files: nothing (every peer), or (supervise only) copy it to its console,
// or watch it for a ready_log_line that matches the last line, so that
// the matcher follows the whole stream.
type logMode string

const (
	logFileOnly logMode = ""
	logConsole  logMode = "console"
	logReady    logMode = "ready_log_line"
)

func (m logMode) metric() string {
	switch m {
	case logConsole:
		return "log capture to files + console"
	case logReady:
		return "log capture to files, ready_log_line"
	}
	return "log capture to files"
}

// logs has one program write bytes of numbered 100-byte lines to stdout as
// fast as it can, captured by the supervisor into rotating files; it
// reports MB/s from the program's start to the last write into a log
// file, and checks every line arrived once, whole. A mode other than
// logFileOnly is supervise's alone; other peers skip it.
func (r *runner) logs(p peer, bytes int64, mode logMode) ([]Row, error) {
	if mode != logFileOnly && p.name() != "supervise" {
		return nil, nil
	}
	dir, err := r.workdir("log-" + p.name())
	if err != nil {
		return nil, err
	}
	if !r.keep {
		// Last, after the supervisor is stopped: the next run must not
		// find the machine holding this one's files (hundreds of MiB,
		// mostly dirty pages), which slowed every later run.
		defer os.RemoveAll(dir)
	}
	logDir := filepath.Join(dir, "logs")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		return nil, err
	}
	timing := filepath.Join(dir, "timing")
	lines := bytes / 100
	progs := []program{{name: "spew", argv: []string{r.helper, "spew", strconv.FormatInt(bytes, 10), timing}, logDir: logDir,
		console: mode == logConsole}}
	if mode == logReady {
		progs[0].readyLine = fmt.Sprintf("^0*%d ", lines-1) // the last line's number
	}
	want := lines * 100
	t, err := launch(p, dir, progs, nil)
	if err != nil {
		return nil, err
	}
	defer func() { p.shutdown(t, progs); t.close() }()

	deadline := time.Now().Add(10 * time.Minute)
	var start, end int64 // the program's first instruction and the return of its last write
	for {
		if b, err := os.ReadFile(timing); err == nil && strings.Contains(string(b), "\nend ") {
			f := strings.Fields(string(b))
			start, _ = strconv.ParseInt(f[1], 10, 64)
			end, _ = strconv.ParseInt(f[3], 10, 64)
			break
		}
		if !t.alive() {
			return nil, errorf(t, "exited during the log test")
		}
		if time.Now().After(deadline) {
			return nil, errorf(t, "the program did not finish writing within 10 min")
		}
		if err := sleepCtx(r.ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
	// The program is done. Wait until the files hold every byte (or stop
	// growing for 5 s) and two listings 100 ms apart agree, so that no
	// rotation is half done when the lines are counted.
	var prev string
	quietSince := time.Now()
	for {
		files, size, _, err := logFiles(logDir)
		if err != nil {
			return nil, err
		}
		listing := fmt.Sprint(files, size)
		if listing != prev {
			quietSince = time.Now()
		}
		if listing == prev && size >= want || time.Since(quietSince) > 5*time.Second {
			break
		}
		prev = listing
		if err := sleepCtx(r.ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
	files, _, last, err := logFiles(logDir)
	if err != nil {
		return nil, err
	}
	found, dup, bad, err := checkLines(files, lines)
	if err != nil {
		return nil, err
	}
	// A file's mtime comes from the kernel's coarse clock (one tick, 4 ms
	// at HZ=250, behind); the last byte cannot have reached the file
	// before the program's last write returned.
	last = max(last, end)
	mb := fmt.Sprintf("%d MiB", bytes>>20)
	note := fmt.Sprintf("%d files, %d lines duplicated, %d malformed", len(files), dup, bad)
	return []Row{
		{Bench: "log", Metric: mode.metric() + ", " + mb, Value: float64(found*100) / (float64(last-start) / 1e9) / 1e6, Unit: "MB/s", Better: "higher", Samples: 1,
			Note: fmt.Sprintf("the program's writes returned after %.0f ms, the last byte was in a file after %.0f ms", float64(end-start)/1e6, float64(last-start)/1e6)},
		{Bench: "log", Metric: "log lines lost" + strings.TrimPrefix(mode.metric(), "log capture to files") + ", " + mb, Value: float64(lines - found), Unit: "lines", Better: "lower", Samples: 1, Note: note},
	}, nil
}

// status times the peer's command that reports every program (statusCmd)
// statusRuns times after one warm-up run, and reports the median: what a
// dashboard or a script polling the supervisor waits for.
func (r *runner) status(p peer, t *tree, progs []program, nstr string) (*Row, error) {
	argv := p.statusCmd(t, progs)
	if argv == nil {
		return nil, nil
	}
	const statusRuns = 30
	var took []time.Duration
	for i := range statusRuns + 1 {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = t.dir
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(t0)
		// sv and svstat exit non-zero for a service that is not up; a
		// reply that lists nothing is the failure that counts.
		if err != nil && len(out) == 0 {
			return nil, fmt.Errorf("%s: %v", strings.Join(argv[:1], " "), err)
		}
		if i > 0 {
			took = append(took, d)
		}
	}
	return &Row{Bench: "status", Metric: "status of every program, " + nstr, Value: ms(percentile(took, 50)), Unit: "ms", Better: "lower",
		Samples: len(took), Note: fmt.Sprintf("%s: %s", nstr, filepath.Base(argv[0])+" "+strings.Join(argv[1:min(len(argv), 2)], " "))}, nil
}

// logFiles lists the files a log pipeline wrote in dir (current, @…
// archives, NAME.log and its rotations), their total size and the latest
// modification time (CLOCK_REALTIME ns).
func logFiles(dir string) (files []string, size, mtime int64, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, 0, err
	}
	for _, e := range ents {
		n := e.Name()
		// s6-log and svlogd name a file being rotated "previous".
		if !(n == "current" || n == "previous" || strings.HasPrefix(n, "@") || strings.Contains(n, ".log")) {
			continue // lock, state, config …
		}
		var st unix.Stat_t
		path := filepath.Join(dir, n)
		if err := unix.Stat(path, &st); err != nil {
			continue // rotated away between the two reads
		}
		files = append(files, path)
		size += st.Size
		mtime = max(mtime, st.Mtim.Nano())
	}
	return files, size, mtime, nil
}

// checkLines reads every line of files and counts the distinct numbered
// lines 0..lines-1 that arrived whole, the ones that arrived more than
// once, and lines that are not such a line at all.
func checkLines(files []string, lines int64) (found, dup, bad int64, err error) {
	seen := make([]uint64, (lines+63)/64)
	filler := strings.Repeat("x", 88)
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return 0, 0, 0, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if len(l) != 99 || l[10] != ' ' || l[11:] != filler {
				bad++
				continue
			}
			n, err := strconv.ParseInt(l[:10], 10, 64)
			if err != nil || n < 0 || n >= lines {
				bad++
				continue
			}
			if seen[n/64]&(1<<(n%64)) != 0 {
				dup++
				continue
			}
			seen[n/64] |= 1 << (n % 64)
			found++
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return 0, 0, 0, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return found, dup, bad, nil
}
