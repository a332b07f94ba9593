package soak

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// task is one process as /proc/PID/stat shows it.
type task struct {
	pid, ppid int
	comm      string
	state     byte   // R S D Z T …
	start     uint64 // start time in clock ticks since boot: with pid, a process's identity
}

// readTask parses /proc/PID/stat; ok is false when pid is gone.
func readTask(pid int) (task, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return task{}, false
	}
	// comm is in parentheses and may hold spaces and parentheses itself:
	// the fields start after the last ')'.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+2 >= len(b) {
		return task{}, false
	}
	f := strings.Fields(string(b[end+2:]))
	if len(f) < 20 {
		return task{}, false
	}
	t := task{pid: pid, comm: string(b[open+1 : end]), state: f[0][0]}
	t.ppid, _ = strconv.Atoi(f[1])
	t.start, _ = strconv.ParseUint(f[19], 10, 64)
	return t, true
}

// allTasks reads every process of the machine.
func allTasks() map[int]task {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make(map[int]task, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if t, ok := readTask(pid); ok {
			out[pid] = t
		}
	}
	return out
}

// descendants returns every process below root (root excluded), from one
// snapshot of all processes.
func descendants(all map[int]task, root int) []task {
	children := map[int][]int{}
	for _, t := range all {
		children[t.ppid] = append(children[t.ppid], t.pid)
	}
	var out []task
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, all[c])
			queue = append(queue, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// isDescendant reports whether pid has root among its ancestors, reading
// the chain now.
func isDescendant(pid, root int) bool {
	for range 64 {
		t, ok := readTask(pid)
		if !ok || t.ppid <= 1 {
			return false
		}
		if t.ppid == root {
			return true
		}
		pid = t.ppid
	}
	return false
}

// signalDescendant sends sig to pid only if pid is, at the moment of the
// signal, a descendant of root: the pidfd pins the process, so a pid that
// was reused between our look and the signal is never hit (the signal
// then fails with ESRCH). On a shared machine a stale pid must never reach
// somebody else's process.
func signalDescendant(pid, root int, sig syscall.Signal) error {
	if pid <= 1 || pid == root {
		return fmt.Errorf("refusing to signal pid %d", pid)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(fd)
	if !isDescendant(pid, root) {
		return fmt.Errorf("pid %d is not a descendant of the supervisor", pid)
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		return fmt.Errorf("signalling %d: %w", pid, err)
	}
	return nil
}

// statusField returns a numeric field of /proc/PID/status ("VmRSS",
// "Threads"); -1 when it cannot be read.
func statusField(pid int, name string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == name {
			f := strings.Fields(v)
			if len(f) == 0 {
				return -1
			}
			n, err := strconv.Atoi(f[0])
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// fdKinds counts the open fds of pid by what they point to ("pipe",
// "socket", "anon_inode:[pidfd]", a file path's kind …), so a leak can be
// told by its kind.
func fdKinds(pid int) (total int, kinds map[string]int, err error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, nil, err
	}
	kinds = map[string]int{}
	for _, e := range ents {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue // closed meanwhile
		}
		kinds[fdKind(target)]++
		total++
	}
	return total, kinds, nil
}

func fdKind(target string) string {
	switch {
	case strings.HasPrefix(target, "pipe:"):
		return "pipe"
	case strings.HasPrefix(target, "socket:"):
		return "socket"
	case strings.HasPrefix(target, "anon_inode:"):
		return target
	case strings.HasPrefix(target, "/sys/fs/cgroup"):
		return "cgroup file"
	case strings.HasPrefix(target, "/dev/"):
		return target
	case strings.HasPrefix(target, "/proc/"):
		return "/proc file"
	default:
		return "file"
	}
}

// diffKinds renders the per-kind difference between two fd censuses.
func diffKinds(before, after map[string]int) string {
	keys := map[string]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	var parts []string
	for k := range keys {
		if d := after[k] - before[k]; d != 0 {
			parts = append(parts, fmt.Sprintf("%s %+d", k, d))
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "no change by kind"
	}
	return strings.Join(parts, ", ")
}

// runMarked lists the processes whose environment carries marker (every
// program of the run has it) or whose executable is our binary (the
// supervisor and the sandbox inits).
func runMarked(marker, exe string) []task {
	var out []task
	for pid, t := range allTasks() {
		if pid == os.Getpid() {
			continue
		}
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && link == exe {
			out = append(out, t)
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		if bytes.Contains(env, []byte(marker)) {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// describe renders processes for a failure message, with their command lines.
func describe(ts []task) string {
	var b strings.Builder
	for i, t := range ts {
		if i == 20 {
			fmt.Fprintf(&b, "  … and %d more\n", len(ts)-i)
			break
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", t.pid))
		parent, _ := readTask(t.ppid)
		fmt.Fprintf(&b, "  pid %d state %c comm %q ppid %d (%s) cmdline %q\n",
			t.pid, t.state, t.comm, t.ppid, parent.comm, strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " "))
	}
	return b.String()
}
