//go:build linux

// Command upgrade measures the take-over time of an upgrade in place: from
// the upgrade command to the new supervise answering status, with 1, 100
// and 1,000 programs running (each holding its two output pipes, which
// cross the exec, and writing a line now and then).
//
//	go run ./bench/upgrade -supervise path/to/supervise [-upgrades 20] [-sizes 1,100,1000]
//
// Each size runs its own supervise; the figures are the median, the
// fastest and the slowest of its upgrades. Printed, never asserted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/supervise-dev/supervise/ctl"
)

func main() {
	sup := flag.String("supervise", "", "the supervise binary")
	upgrades := flag.Int("upgrades", 20, "upgrades per size")
	sizes := flag.String("sizes", "1,100,1000", "numbers of programs, comma-separated")
	flag.Parse()
	if *sup == "" {
		fmt.Fprintln(os.Stderr, "upgrade bench: -supervise is required")
		os.Exit(2)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "programs\tupgrades\tmedian\tmin\tmax")
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "upgrade bench: size %q\n", s)
			os.Exit(2)
		}
		times, err := measure(*sup, n, *upgrades)
		if err != nil {
			fmt.Fprintf(os.Stderr, "upgrade bench: %d programs: %v\n", n, err)
			os.Exit(1)
		}
		slices.Sort(times)
		fmt.Fprintf(tw, "%d\t%d\t%v\t%v\t%v\n", n, len(times), round(times[len(times)/2]), round(times[0]), round(times[len(times)-1]))
	}
	tw.Flush()
}

func round(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }

// measure runs n programs under a copy of sup and times upgrades of it.
func measure(sup string, n, upgrades int) ([]time.Duration, error) {
	dir, err := os.MkdirTemp("", "upgrade-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	exe := filepath.Join(dir, "supervise")
	b, err := os.ReadFile(sup)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		return nil, err
	}
	var cfg strings.Builder
	for i := range n {
		fmt.Fprintf(&cfg, "[program.p%d]\ncommand = [\"sh\", \"-c\", \"while :; do echo tick; sleep 5; done\"]\nstdout = { file = %q }\n\n",
			i, filepath.Join(dir, "p"+strconv.Itoa(i)+".log"))
	}
	file := filepath.Join(dir, "supervise.toml")
	if err := os.WriteFile(file, []byte(cfg.String()), 0o644); err != nil {
		return nil, err
	}
	socket := filepath.Join(dir, "s.sock")
	cmd := exec.Command(exe, "run", "-c", file, "--socket", socket)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	c := ctl.Dial(socket)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := waitRunning(ctx, c, n); err != nil {
		return nil, err
	}
	var times []time.Duration
	for range upgrades {
		t0 := time.Now()
		st, err := c.Upgrade(ctx)
		if err != nil {
			return nil, err
		}
		if err := waitGeneration(ctx, c, st.Generation); err != nil {
			return nil, err
		}
		if _, err := c.Status(ctx, nil); err != nil {
			return nil, err
		}
		times = append(times, time.Since(t0))
	}
	return times, nil
}

func waitRunning(ctx context.Context, c *ctl.Client, n int) error {
	for {
		st, err := c.Status(ctx, nil)
		if err == nil {
			running := 0
			for _, p := range st {
				if p.State == "Running" {
					running++
				}
			}
			if running == n {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d programs to run: %w", n, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitGeneration asks version until the upgrade's outcome is there.
func waitGeneration(ctx context.Context, c *ctl.Client, gen int) error {
	for {
		if v, err := c.Version(ctx); err == nil {
			for _, r := range v.Upgrades {
				if r.Generation == gen {
					if r.Error != "" {
						return errors.New(r.Error)
					}
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}
