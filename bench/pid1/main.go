//go:build linux

// Command pid1 benchmarks `supervise exec` (and supervise-init, with -init)
// against tini and dumb-init:
//
//   - wall time to run `/bin/true` under each init (fork, exec, the init
//     starts the command, reaps it, exits, we reap the init), and
//   - the delay from a SIGTERM sent to the init until the command has it.
//
// The cases run interleaved in the same run, each round in a new order,
// so machine load and what one case leaves behind for the next hit them
// alike. It prints medians, p90s and ratios against tini.
//
//	go run ./bench/pid1 [-n 300] [-supervise path/to/supervise] [-init supervise-init]
//	    [-init-before supervise-init] [-floor floor] [-floor-linked floor-linked] [-tsv FILE]
//
// With -tsv it also appends its figures to FILE in the columns of
// bench/peers (bench/run merges them into bench/results).
//
// tini and dumb-init come from Debian (apt-get install tini dumb-init).
// tini runs with -s: not PID 1, it needs to be a subreaper to reap, which
// supervise makes itself anyway.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"
)

const childArg = "__pid1bench_child"

func main() {
	if len(os.Args) > 1 && os.Args[1] == childArg {
		os.Exit(signalChild())
	}
	n := flag.Int("n", 300, "runs per case")
	sup := flag.String("supervise", "", "supervise binary (default: build ./cmd/supervise with CGO_ENABLED=0)")
	initBin := flag.String("init", "", "supervise-init binary, measured too when given")
	initBefore := flag.String("init-before", "", "another supervise-init build (a change's before), measured beside -init as supervise-init-before")
	floor := flag.String("floor", "", "bench/pid1/floor binary: the Go floor, measured too when given")
	linked := flag.String("floor-linked", "", "bench/pid1/floor built with -tags floorlinked (it carries the code supervise-init's init reaches), measured too when given")
	tsv := flag.String("tsv", "", "also append the figures to this TSV file (bench/peers columns)")
	flag.Parse()
	if err := run(*n, *sup, *initBin, *initBefore, *floor, *linked, *tsv); err != nil {
		fmt.Fprintln(os.Stderr, "pid1 bench:", err)
		os.Exit(1)
	}
}

type initCase struct {
	name string
	impl string   // the column in bench/results
	argv []string // the init and its flags, the command follows
	// wallOnly: not in the signal benchmark (it forwards no signal).
	wallOnly bool
}

func run(n int, sup, initBin, initBefore, floor, linked, tsv string) error {
	if sup == "" {
		var cleanup func()
		var err error
		if sup, cleanup, err = buildSupervise(); err != nil {
			return err
		}
		defer cleanup()
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cases := []initCase{{name: "none (command alone)", impl: "none"}, {name: "supervise exec", impl: "supervise", argv: []string{sup, "exec", "--"}}}
	if initBin != "" {
		cases = append(cases, initCase{name: "supervise-init", impl: "supervise-init", argv: []string{initBin, "--"}})
	}
	if initBefore != "" {
		cases = append(cases, initCase{name: "supervise-init (before)", impl: "supervise-init-before", argv: []string{initBefore, "--"}})
	}
	if floor != "" {
		cases = append(cases,
			initCase{name: "Go floor", impl: "go-floor", argv: []string{floor, "--"}, wallOnly: true},
			initCase{name: "Go floor + os/signal", impl: "go-floor-notify", argv: []string{floor, "--notify", "--"}})
	}
	if linked != "" {
		cases = append(cases, initCase{name: "Go floor, init's code carried", impl: "go-floor-linked", argv: []string{linked, "--"}, wallOnly: true})
	}
	for _, c := range []initCase{{name: "tini -s", impl: "tini", argv: []string{"tini", "-s", "--"}}, {name: "dumb-init", impl: "dumb-init", argv: []string{"dumb-init"}}} {
		p, err := exec.LookPath(c.argv[0])
		if err != nil {
			return fmt.Errorf("%s is not installed (apt-get install tini dumb-init)", c.argv[0])
		}
		c.argv[0] = p
		cases = append(cases, c)
	}
	tini := func(cs []initCase) int {
		return slices.IndexFunc(cs, func(c initCase) bool { return c.impl == "tini" })
	}
	trueBin, err := exec.LookPath("true")
	if err != nil {
		return err
	}
	fmt.Printf("pid1 bench: %d runs per case, interleaved; %d CPUs; load %s\n", n, numCPU(), loadavg())
	fmt.Printf("supervise: %s\n\n", sup)

	date := time.Now().UTC().Format(time.RFC3339)
	load0 := loadavg()
	wall := make([][]time.Duration, len(cases))
	order := rand.New(rand.NewPCG(1, 2))
	for range n {
		for _, i := range roundOrder(order, len(cases)) {
			c := cases[i]
			d, err := timeRun(append(slices.Clone(c.argv), trueBin))
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			wall[i] = append(wall[i], d)
		}
	}
	load1 := loadavg()
	fmt.Println("Wall time of INIT -- /bin/true (spawn to reaped):")
	table(cases, wall, tini(cases))

	sigCases := slices.DeleteFunc(slices.Clone(cases), func(c initCase) bool { return c.wallOnly })
	delay := make([][]time.Duration, len(sigCases))
	for range n {
		for _, i := range roundOrder(order, len(sigCases)) {
			c := sigCases[i]
			argv := slices.Clone(c.argv)
			if c.impl == "supervise" || strings.HasPrefix(c.impl, "supervise-init") {
				// The child reports on descriptor 3; supervise passes on
				// only what it is told to (tini and dumb-init pass all).
				argv = slices.Insert(argv, len(argv)-1, "--preserve-fds", "1")
			}
			d, err := signalDelay(append(argv, self, childArg))
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			delay[i] = append(delay[i], d)
		}
	}
	load2 := loadavg()
	fmt.Println("\nSIGTERM to the init until the command's handler has it (the command is a Go program, its own signal latency is in every row):")
	table(sigCases, delay, tini(sigCases))
	if tsv == "" {
		return nil
	}
	return writeTSV(tsv, date, []tsvPhase{
		{"init: exec /bin/true, wall", cases, wall, load0, load1},
		{"init: SIGTERM to the child", sigCases, delay, load1, load2},
	})
}

// roundOrder is the order of one round's cases: a new shuffle every
// round. A run leaves work behind it for the kernel (its exit's tail, the
// release of its session's scheduling group), which slows whatever starts
// next; in a fixed order (or a rotation of one) a case would always follow
// the same one, the heaviest being supervise exec's 19 MB, and pay for it
// in every round. The seed is fixed: two runs take the same orders.
func roundOrder(r *rand.Rand, n int) []int { return r.Perm(n) }

type tsvPhase struct {
	metric             string
	cases              []initCase
	samples            [][]time.Duration
	loadStart, loadEnd string
}

// writeTSV appends the median and p90 of each phase and case to file in
// the columns of bench/peers (results.go), writing the header first when
// the file is new.
func writeTSV(file, date string, phases []tsvPhase) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		fmt.Fprintln(f, "date\tbench\tmetric\timpl\tvalue\tunit\tbetter\tsamples\tload_start\tload_end\tnproc\tkernel\tnote")
	}
	var u unix.Utsname
	_ = unix.Uname(&u)
	kernel := unix.ByteSliceToString(u.Release[:])
	for _, ph := range phases {
		for _, stat := range []struct {
			name string
			p    int
		}{{"median", 50}, {"p90", 90}} {
			for i, c := range ph.cases {
				note := ""
				if c.impl == "tini" {
					note = "tini -s: a subreaper, as it is not PID 1 here"
				}
				v := float64(percentile(ph.samples[i], stat.p)) / 1e6
				if _, err := fmt.Fprintf(f, "%s\tinit\t%s, %s\t%s\t%g\tms\tlower\t%d\t%s\t%s\t%d\t%s\t%s\n", date, ph.metric, stat.name,
					c.impl, v, len(ph.samples[i]), ph.loadStart, ph.loadEnd, numCPU(), kernel, note); err != nil {
					return err
				}
			}
		}
	}
	return f.Close()
}

// table prints median and p90 per case, with the difference and ratio of
// the medians against the row ref (tini).
func table(cases []initCase, samples [][]time.Duration, ref int) {
	med := make([]time.Duration, len(cases))
	for i := range cases {
		med[i] = percentile(samples[i], 50)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "case\tmedian\tp90\tmin\tmedian - %s\tmedian / %s\t\n", cases[ref].name, cases[ref].name)
	for i, c := range cases {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%+.3f ms\t%.2f\t\n", c.name, ms(med[i]), ms(percentile(samples[i], 90)),
			ms(slices.Min(samples[i])), float64(med[i]-med[ref])/1e6, float64(med[i])/float64(med[ref]))
	}
	tw.Flush()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }

func percentile(s []time.Duration, p int) time.Duration {
	c := slices.Clone(s)
	slices.Sort(c)
	return c[(len(c)-1)*p/100]
}

// timeRun forks argv with stdio on /dev/null and waits for it.
func timeRun(argv []string) (time.Duration, error) {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	start := time.Now()
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{null.Fd(), null.Fd(), null.Fd()},
	})
	if err != nil {
		return 0, err
	}
	ws, err := wait(pid)
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		return 0, fmt.Errorf("%v ended with status %#x", argv, ws)
	}
	return took, nil
}

func wait(pid int) (syscall.WaitStatus, error) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			return ws, err
		}
	}
}

// signalDelay starts argv (an init over signalChild, or signalChild alone)
// with a pipe as fd 3 (inits pass inherited descriptors through), waits
// for the child's "ready", sends SIGTERM to argv's process and returns the
// time until the child's handler read the clock. CLOCK_MONOTONIC is the
// same clock in every process.
func signalDelay(argv []string) (time.Duration, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{null.Fd(), null.Fd(), os.Stderr.Fd(), w.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	w.Close()
	if err != nil {
		return 0, err
	}
	defer func() {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // only if it is stuck
		_, _ = wait(pid)
	}()
	buf := make([]byte, 8)
	if _, err := r.Read(buf[:1]); err != nil {
		return 0, fmt.Errorf("waiting for the child to be ready: %w", err)
	}
	sent := monotonic()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return 0, err
	}
	if _, err := readFull(r, buf); err != nil {
		return 0, fmt.Errorf("waiting for the child's timestamp: %w", err)
	}
	got := int64(binary.LittleEndian.Uint64(buf))
	ws, err := wait(pid)
	if err != nil {
		return 0, err
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		return 0, fmt.Errorf("%s ended with status %#x", filepath.Base(argv[0]), ws)
	}
	return time.Duration(got - sent), nil
}

func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func monotonic() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// signalChild is the command of the signal benchmark: ready on fd 3, then
// the clock reading at SIGTERM on fd 3, then exit 0.
func signalChild() int {
	out := os.NewFile(3, "report")
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	if _, err := out.Write([]byte{'r'}); err != nil {
		return 1
	}
	<-sigs
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(monotonic()))
	if _, err := out.Write(b[:]); err != nil {
		return 1
	}
	return 0
}

func buildSupervise() (string, func(), error) {
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(mod)))
	dir, err := os.MkdirTemp("", "pid1bench-")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "supervise")
	build := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", bin, "./cmd/supervise")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building supervise: %v\n%s", err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

func numCPU() int {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil {
		return 0
	}
	return set.Count()
}

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
