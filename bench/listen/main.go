//go:build linux

// Command listen measures what a single-instance server's clients see
// while supervise restarts it, with and without `listen` (socket
// activation), side by side in one run:
//
//   - listen: supervise holds the socket; the server takes it from fd 3;
//   - binds: the server binds its port itself (SO_REUSEADDR), as most do.
//
// The server (this binary, re-executed) boots for START_DELAY before it
// serves, as a real one loads its code and config. A client dials one new
// connection after another, each a request and its answer, from the
// restart command until the new process has answered and 200 ms more; a
// refused connection is counted and dialled again at once, and a request's
// latency runs from its first dial to its answer, retries included. The cases take
// turns, restart after restart, so the machine's load hits both alike.
//
//	go run ./bench/listen -supervise path/to/supervise [-restarts 20] [-tsv FILE]
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"
)

const serverArg = "__listenbench_server"

func main() {
	if len(os.Args) > 1 && os.Args[1] == serverArg {
		os.Exit(server())
	}
	sup := flag.String("supervise", "", "the supervise binary")
	restarts := flag.Int("restarts", 20, "restarts per case")
	delay := flag.Duration("start-delay", 200*time.Millisecond, "the server's boot time before it serves")
	tsv := flag.String("tsv", "", "also append the figures to this TSV file (bench/peers columns)")
	flag.Parse()
	if *sup == "" {
		fmt.Fprintln(os.Stderr, "listen bench: -supervise is required")
		os.Exit(2)
	}
	if err := run(*sup, *restarts, *delay, *tsv); err != nil {
		fmt.Fprintln(os.Stderr, "listen bench:", err)
		os.Exit(1)
	}
}

// server answers "pid\n" on each connection, on fd 3 when LISTEN_FDS says
// so, else on 127.0.0.1:$PORT, which it binds after its boot. On SIGTERM
// it stops accepting and answers what it took.
func server() int {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	d, _ := time.ParseDuration(os.Getenv("START_DELAY"))
	var ln net.Listener
	var err error
	if os.Getenv("LISTEN_PID") == strconv.Itoa(os.Getpid()) {
		ln, err = net.FileListener(os.NewFile(3, "listen"))
		time.Sleep(d)
	} else {
		time.Sleep(d)
		ln, err = net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		return 1
	}
	go func() { <-stop; ln.Close() }()
	reply := []byte(strconv.Itoa(os.Getpid()) + "\n")
	var conns sync.WaitGroup
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		conns.Go(func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := bufio.NewReader(c).ReadString('\n'); err == nil {
				c.Write(reply)
			}
		})
	}
	conns.Wait()
	return 0
}

// benchCase is one supervise running the server one way.
type benchCase struct {
	name, note string
	listen     bool
	port       int
	dir        string
	ctl        string
	cmd        *exec.Cmd
	// per restart: every answered connection's latency, the refused
	// dials, the longest time without an answer
	lat     []time.Duration
	refused []int
	gap     []time.Duration
	failed  int // connections that broke after they were accepted
}

func run(sup string, restarts int, delay time.Duration, tsv string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "listenbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ctl := filepath.Join(tmp, "supervisectl")
	if err := os.Symlink(sup, ctl); err != nil {
		return err
	}
	cases := []*benchCase{
		{name: "listen", note: "listen = [\"tcp://127.0.0.1:PORT\"]: supervise holds the socket across the restart", listen: true},
		{name: "binds", note: "the server binds 127.0.0.1:PORT itself once booted"},
	}
	for _, c := range cases {
		if c.port, err = freePort(); err != nil {
			return err
		}
		c.dir = filepath.Join(tmp, c.name)
		c.ctl = ctl
		if err := c.start(sup, self, delay); err != nil {
			return err
		}
		defer c.stop()
	}
	for _, c := range cases {
		if _, err := c.waitAnswer(0, 30*time.Second); err != nil {
			return fmt.Errorf("%s: the first answer: %w", c.name, err)
		}
	}
	load0 := loadavg()
	date := time.Now().UTC().Format(time.RFC3339)
	for range restarts {
		for _, c := range cases {
			if err := c.restart(); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
		}
	}
	load1 := loadavg()
	report(cases, restarts, delay)
	if tsv != "" {
		return writeTSV(tsv, date, cases, delay, load0, load1)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *benchCase) start(sup, self string, delay time.Duration) error {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	listen := ""
	if c.listen {
		listen = fmt.Sprintf("listen = [\"tcp://127.0.0.1:%d\"]\n", c.port)
	}
	cfg := fmt.Sprintf(`[program.srv]
command = [%q, %q]
env = { PORT = "%d", START_DELAY = "%s" }
stop_signal = "TERM"
%s`, self, serverArg, c.port, delay, listen)
	file := filepath.Join(c.dir, "supervise.toml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		return err
	}
	c.cmd = exec.Command(sup, "run", "-c", file, "--socket", filepath.Join(c.dir, "ctl.sock"))
	c.cmd.Dir = c.dir
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return c.cmd.Start()
}

func (c *benchCase) stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// ask makes one connection and returns the pid that answered.
func (c *benchCase) ask() (string, error) {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.port), 10*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "hello\n"); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(conn, 64))
	if err != nil || len(b) == 0 {
		return "", fmt.Errorf("no answer: %v", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// waitAnswer asks until a pid other than old answers.
func (c *benchCase) waitAnswer(old int, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if pid, err := c.ask(); err == nil && pid != strconv.Itoa(old) {
			return pid, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return "", errors.New("no answer")
}

// restart asks supervise to restart the server and dials through it.
func (c *benchCase) restart() error {
	before, err := c.ask()
	if err != nil {
		return fmt.Errorf("before the restart: %w", err)
	}
	cmd := exec.Command(c.ctl, "--socket", filepath.Join(c.dir, "ctl.sock"), "restart", "srv")
	if err := cmd.Start(); err != nil {
		return err
	}
	refused := 0
	var lastOK time.Time
	start := time.Now()
	lastOK = start
	var gap time.Duration
	var after time.Time
	var t0 time.Time // the request's first dial: a refused one is retried at once, as part of it
	for {
		if t0.IsZero() {
			t0 = time.Now()
		}
		pid, err := c.ask()
		now := time.Now()
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			refused++
			continue
		case err != nil:
			c.failed++
			continue
		}
		c.lat = append(c.lat, now.Sub(t0))
		t0 = time.Time{}
		gap = max(gap, now.Sub(lastOK))
		lastOK = now
		if pid != before && after.IsZero() {
			after = now
		}
		if !after.IsZero() && now.Sub(after) > 200*time.Millisecond {
			break
		}
		if now.Sub(start) > 60*time.Second {
			return errors.New("no new process answered within 60s")
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("supervisectl restart: %w", err)
	}
	c.refused = append(c.refused, refused)
	c.gap = append(c.gap, gap)
	return nil
}

func report(cases []*benchCase, restarts int, delay time.Duration) {
	fmt.Printf("A restart of a single-instance server that boots for %v, %d restarts per case:\n", delay, restarts)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "case\tconnections\tlatency p50\tlatency p99\tlatency max\trefused (total)\trefused per restart\tlongest wait for an answer, median\tbroken after accept\t\n")
	for _, c := range cases {
		total := 0
		for _, r := range c.refused {
			total += r
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%.1f\t%s\t%d\t\n", c.name, len(c.lat), ms(pct(c.lat, 50)), ms(pct(c.lat, 99)), ms(slices.Max(c.lat)),
			total, float64(total)/float64(len(c.refused)), ms(pct(c.gap, 50)), c.failed)
	}
	tw.Flush()
}

func writeTSV(file, date string, cases []*benchCase, delay time.Duration, load0, load1 string) error {
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
	nproc := 0
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) == nil {
		nproc = set.Count()
	}
	for _, c := range cases {
		total := 0
		for _, r := range c.refused {
			total += r
		}
		rows := []struct {
			metric, unit string
			v            float64
			n            int
		}{
			{"restart, " + c.name + ": request latency (refused dials retried), p99", "ms", float64(pct(c.lat, 99)) / 1e6, len(c.lat)},
			{"restart, " + c.name + ": refused connections per restart", "count", float64(total) / float64(len(c.refused)), len(c.refused)},
			{"restart, " + c.name + ": longest wait for an answer, median", "ms", float64(pct(c.gap, 50)) / 1e6, len(c.gap)},
		}
		for _, r := range rows {
			if _, err := fmt.Fprintf(f, "%s\tlisten\t%s\tsupervise\t%g\t%s\tlower\t%d\t%s\t%s\t%d\t%s\t%s; server boots %v\n", date, r.metric, r.v, r.unit,
				r.n, load0, load1, nproc, kernel, c.note, delay); err != nil {
				return err
			}
		}
	}
	return f.Close()
}

func pct(s []time.Duration, p int) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	i := (len(c)*p + 99) / 100 // nearest rank
	return c[max(i-1, 0)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }

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
