//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// procEntry is what /proc/PID/stat says about one process.
type procEntry struct {
	Pid, Ppid int
	Comm      string
	State     byte
	Start     uint64 // start time in clock ticks since boot: with Pid, the process's identity
	CPUTicks  uint64 // utime + stime, live and dead threads
}

// clockTick is USER_HZ, the unit of /proc's CPU times: 100 on every Linux ABI.
const clockTick = 10 * time.Millisecond

func readStat(pid int) (procEntry, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procEntry{}, err
	}
	return parseStat(pid, b)
}

// parseStat reads the fields after the command name, which may hold spaces
// and parentheses, so it is cut at the last ')'.
func parseStat(pid int, b []byte) (procEntry, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+2 > len(b) {
		return procEntry{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[end+2:]))
	if len(f) < 20 {
		return procEntry{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state) of proc(5).
	ppid, _ := strconv.Atoi(f[1])
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return procEntry{Pid: pid, Ppid: ppid, Comm: string(b[open+1 : end]), State: f[0][0], Start: start, CPUTicks: ut + st}, nil
}

// listProcs reads every process of the machine. Processes that end while
// it reads are skipped.
func listProcs() (map[int]procEntry, error) {
	d, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	all := make(map[int]procEntry, len(d))
	for _, e := range d {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := readStat(pid); err == nil {
			all[pid] = p
		}
	}
	return all, nil
}

// descendants returns root and every process below it in all.
func descendants(all map[int]procEntry, root int) []procEntry {
	kids := map[int][]int{}
	for _, p := range all {
		kids[p.Ppid] = append(kids[p.Ppid], p.Pid)
	}
	var out []procEntry
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if p, ok := all[pid]; ok {
			out = append(out, p)
		}
		queue = append(queue, kids[pid]...)
	}
	return out
}

func cmdline(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// isProgram says whether pid is one of the benchmark's sleep programs:
// /bin/sleep with the run's marker as its argument, an argument nothing
// else on the machine uses.
func isProgram(pid int, marker string) bool {
	c := cmdline(pid)
	return len(c) == 2 && filepath.Base(c[0]) == "sleep" && c[1] == marker
}

// split separates the supervision (the supervisor and its helpers, such
// as s6-supervise or runsv) from the programs it runs.
func split(tree []procEntry, marker string) (supervision, programs []procEntry) {
	for _, p := range tree {
		if isProgram(p.Pid, marker) {
			programs = append(programs, p)
		} else if p.State != 'Z' {
			supervision = append(supervision, p)
		}
	}
	return supervision, programs
}

// mostDescriptors is the most open descriptors one of procs holds: what
// a descriptor limit, which is per process, is measured against.
func mostDescriptors(procs []procEntry) (int, error) {
	most := 0
	for _, p := range procs {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(p.Pid) + "/fd")
		if err != nil {
			return 0, fmt.Errorf("descriptors of %s (%d): %w", p.Comm, p.Pid, err)
		}
		most = max(most, len(ents))
	}
	return most, nil
}

// memory sums Rss and Pss (KiB) of smaps_rollup over procs.
func memory(procs []procEntry) (rssKiB, pssKiB int64, err error) {
	for _, p := range procs {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/smaps_rollup")
		if err != nil {
			return 0, 0, fmt.Errorf("memory of %s (%d): %w", p.Comm, p.Pid, err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			n, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "Rss:":
				rssKiB += n
			case "Pss:":
				pssKiB += n
			}
		}
	}
	return rssKiB, pssKiB, nil
}

// usage is the cost counters of a set of processes at one moment.
type usage struct {
	cpu   time.Duration // utime+stime of each process (its live and dead threads), tick resolution
	run   time.Duration // on-CPU time of every live thread (schedstat), ns resolution
	ctxsw int64         // voluntary + involuntary context switches of every live thread
	procs int
}

// usageOf reads the counters of procs, keyed by pid and start time so
// that a process that ended (or a reused pid) is not compared with itself.
func usageOf(procs []procEntry) map[[2]uint64]usage {
	out := make(map[[2]uint64]usage, len(procs))
	for _, p := range procs {
		st, err := readStat(p.Pid)
		if err != nil || st.Start != p.Start {
			continue
		}
		u := usage{cpu: time.Duration(st.CPUTicks) * clockTick, procs: 1}
		base := "/proc/" + strconv.Itoa(p.Pid) + "/task/"
		tasks, _ := os.ReadDir(base)
		for _, t := range tasks {
			if b, err := os.ReadFile(base + t.Name() + "/schedstat"); err == nil {
				if f := strings.Fields(string(b)); len(f) > 0 {
					ns, _ := strconv.ParseInt(f[0], 10, 64)
					u.run += time.Duration(ns)
				}
			}
			if b, err := os.ReadFile(base + t.Name() + "/status"); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if k, v, ok := strings.Cut(l, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
						n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
						u.ctxsw += n
					}
				}
			}
		}
		out[[2]uint64{uint64(p.Pid), p.Start}] = u
	}
	return out
}

// usageDelta sums after-before over the processes present in both.
func usageDelta(before, after map[[2]uint64]usage) usage {
	var d usage
	for k, a := range after {
		b, ok := before[k]
		if !ok {
			continue
		}
		d.cpu += a.cpu - b.cpu
		d.run += a.run - b.run
		d.ctxsw += a.ctxsw - b.ctxsw
		d.procs++
	}
	return d
}
