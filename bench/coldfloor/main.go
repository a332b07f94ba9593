//go:build linux

// Command coldfloor measures the least a supervisor can take to start N
// programs each in a cgroup of its own: per program a mkdir in each cgroup
// hierarchy named, a pipe for its output, fork and exec of /bin/sleep, its
// pid written to each cgroup.procs after the exec (a floor, not race-free:
// supervise places a program before it runs), on two workers as
// supervise's default. It prints the time from the first mkdir until the
// last exec returned, for each hierarchy list given, in rounds, so that
// a cold start of supervise's (bench/peers) can be set against what the
// kernel's part of it costs on the same machine.
//
//	go build -o /tmp/coldfloor ./bench/coldfloor
//	/tmp/coldfloor -n 1000 -rounds 3 memory,cpu,cpuacct,freezer memory ""
//
// Each argument is a comma-separated list of v1 hierarchies under
// /sys/fs/cgroup; "" is no cgroup. On a cgroup v2 host any non-empty list
// means one cgroup per program in the unified hierarchy. Runs as root.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 1000, "programs per start")
	workers := flag.Int("workers", 2, "programs started at once")
	rounds := flag.Int("rounds", 3, "rounds over the lists")
	flag.Parse()
	lists := flag.Args()
	if len(lists) == 0 {
		lists = []string{"memory,cpu,cpuacct,freezer", ""}
	}
	v2 := exists("/sys/fs/cgroup/cgroup.controllers")
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("coldfloor: %d programs, %d workers; load %s", *n, *workers, load)
	for r := 0; r < *rounds; r++ {
		for _, list := range lists {
			var roots []string
			if list != "" {
				if v2 {
					roots = []string{"/sys/fs/cgroup"}
				} else {
					for _, h := range strings.Split(list, ",") {
						roots = append(roots, filepath.Join("/sys/fs/cgroup", h))
					}
				}
			}
			d, err := start(*n, *workers, roots)
			name := list
			if name == "" {
				name = "no cgroup"
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "coldfloor: %s: %v\n", name, err)
				os.Exit(1)
			}
			fmt.Printf("  %-30s %8.1f ms\n", name, float64(d.Microseconds())/1000)
		}
	}
}

// start starts n sleeps in cgroups under a fresh directory of each root,
// returns how long that took, then kills them and removes what it made.
func start(n, workers int, roots []string) (time.Duration, error) {
	var dirs []string
	for _, root := range roots {
		d, err := os.MkdirTemp(root, "coldfloor-")
		if err != nil {
			return 0, err
		}
		dirs = append(dirs, d)
	}
	var (
		mu     sync.Mutex
		procs  []*os.Process
		pipes  []*os.File
		first  error
		wg     sync.WaitGroup
		starts = make(chan int)
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	t0 := time.Now()
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := range starts {
				p, r, err := startOne(i, dirs)
				if err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				procs, pipes = append(procs, p), append(pipes, r)
				mu.Unlock()
			}
		})
	}
	for i := 0; i < n; i++ {
		starts <- i
	}
	close(starts)
	wg.Wait()
	took := time.Since(t0)
	for _, p := range procs {
		p.Kill()
		p.Wait()
	}
	for _, r := range pipes {
		r.Close()
	}
	for _, d := range dirs {
		for i := 0; i < n; i++ {
			rmdir(filepath.Join(d, "p"+strconv.Itoa(i)))
		}
		rmdir(d)
	}
	return took, first
}

func startOne(i int, dirs []string) (*os.Process, *os.File, error) {
	name := "p" + strconv.Itoa(i)
	for _, d := range dirs {
		if err := os.Mkdir(filepath.Join(d, name), 0o755); err != nil {
			return nil, nil, err
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command("/bin/sleep", "100000")
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	pid := []byte(strconv.Itoa(cmd.Process.Pid))
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, name, "cgroup.procs"), pid, 0); err != nil {
			cmd.Process.Kill()
			cmd.Process.Wait()
			r.Close()
			return nil, nil, err
		}
	}
	return cmd.Process, r, nil
}

// rmdir removes a cgroup directory, waiting out the kernel's EBUSY while
// the processes killed in it are torn down.
func rmdir(d string) {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := syscall.Rmdir(d)
		if err == nil || err == syscall.ENOENT || err != syscall.EBUSY || time.Now().After(deadline) {
			return
		}
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
