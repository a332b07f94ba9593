// Command scrape measures the metrics listener of `supervise run` with a
// fleet of programs: the latency of a scrape of /metrics, back to back
// (the cgroup figures come from the supervisor's one-second cache) and
// once a second (as Prometheus scrapes; the figures are read afresh), and
// the supervisor's CPU time per second idle and while scraped once a
// second. It prints figures and asserts nothing.
//
//	CGO_ENABLED=0 go build -o /tmp/b/ ./cmd/supervise ./bench/scrape
//	sudo /tmp/b/scrape -supervise /tmp/b/supervise [-n 1000] [-seconds 60]
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	sup := flag.String("supervise", "", "the supervise binary (required)")
	n := flag.Int("n", 1000, "programs")
	back := flag.Int("back", 200, "back-to-back scrapes")
	secs := flag.Int("seconds", 60, "seconds of idle, and of scraping once a second")
	flag.Parse()
	if *sup == "" {
		fmt.Fprintln(os.Stderr, "scrape: -supervise is required")
		os.Exit(2)
	}
	if err := run(*sup, *n, *back, *secs); err != nil {
		fmt.Fprintln(os.Stderr, "scrape:", err)
		os.Exit(1)
	}
}

func run(sup string, n, back, secs int) error {
	dir, err := os.MkdirTemp("", "scrapebench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var cfg strings.Builder
	for i := range n {
		fmt.Fprintf(&cfg, "[program.p%04d]\ncommand = [\"/bin/sleep\", \"100000\"]\n", i)
	}
	file := filepath.Join(dir, "supervise.toml")
	if err := os.WriteFile(file, []byte(cfg.String()), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(sup, "run", "-c", file, "--socket", filepath.Join(dir, "s.sock"), "--http", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`msg="supervise running".* http=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-time.After(time.Minute):
		return fmt.Errorf("supervise did not say it runs")
	}
	client := &http.Client{Timeout: time.Minute}
	scrape := func(path string) (time.Duration, int, int, error) {
		t := time.Now()
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, 0, 0, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return time.Since(t), resp.StatusCode, len(b), err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if _, code, _, err := scrape("/readyz"); err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the %d programs were not all ready within 5 minutes", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("scrape bench: %d programs, load %s\n", n, loadavg())
	var size int
	for range 5 { // warm the connection and the buffers
		if _, _, size, err = scrape("/metrics"); err != nil {
			return err
		}
	}
	fmt.Printf("/metrics: %d bytes, %d lines\n", size, countLines(base, client))

	var lat []time.Duration
	for range back {
		d, code, _, err := scrape("/metrics")
		if err != nil || code != 200 {
			return fmt.Errorf("scrape: %d %v", code, err)
		}
		lat = append(lat, d)
	}
	report(fmt.Sprintf("back to back (%d)", back), lat)

	pid := cmd.Process.Pid
	time.Sleep(2 * time.Second) // let the start-up settle
	c0, t0 := cpuTime(pid), time.Now()
	time.Sleep(time.Duration(secs) * time.Second)
	idle := perSecond(cpuTime(pid)-c0, time.Since(t0))

	lat = lat[:0]
	c0, t0 = cpuTime(pid), time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
			d, code, _, err := scrape("/metrics")
			if err != nil || code != 200 {
				return fmt.Errorf("scrape: %d %v", code, err)
			}
			lat = append(lat, d)
		}
	}
	scraped := perSecond(cpuTime(pid)-c0, time.Since(t0))
	report(fmt.Sprintf("once a second (%d)", len(lat)), lat)
	fmt.Printf("supervise CPU: idle %.2f ms/s, scraped once a second %.2f ms/s: the scrape costs %.2f ms of CPU per second (load %s)\n",
		idle, scraped, scraped-idle, loadavg())
	return nil
}

func report(what string, lat []time.Duration) {
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("scrape latency, %s: median %.2f ms, p99 %.2f ms, max %.2f ms\n",
		what, ms(lat[len(lat)/2]), ms(lat[min(len(lat)-1, len(lat)*99/100)]), ms(lat[len(lat)-1]))
}

func countLines(base string, c *http.Client) int {
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return bytes.Count(b, []byte("\n"))
}

// cpuTime is the user and system time of pid, from /proc (USER_HZ 100).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	u, _ := strconv.ParseInt(string(f[11]), 10, 64)
	s, _ := strconv.ParseInt(string(f[12]), 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

func perSecond(cpu, wall time.Duration) float64 {
	return float64(cpu.Microseconds()) / 1000 / wall.Seconds()
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}
