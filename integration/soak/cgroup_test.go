package soak

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The supervisor of the soak runs in a cgroup of its own, <own>/<name> in
// every hierarchy the cgroups package uses. proc puts its sandboxes under
// "<the supervisor's cgroup>/supervise", so that subtree is the soak's
// alone: other supervisors on this shared machine (the integration tests
// of other sessions) use "<own>/supervise" beside it, and a leftover there
// is not ours to count. After the supervisor exits, anything under our
// cgroup (but the v2 "supervisor" leaf it moves itself into) is a leak.

const (
	cgroupFS = "/sys/fs/cgroup"
	// subtree and leaf are the names proc/cgroups gives the sandboxes'
	// parent and, on v2, the supervisor's own leaf.
	subtree = "supervise"
	v2Leaf  = "supervisor"
)

// v1Controllers are the v1 hierarchies proc/cgroups uses.
var v1Controllers = []string{"memory", "cpu", "cpuacct", "pids", "freezer"}

type soakCgroup struct {
	dirs []string // our cgroup in each hierarchy
	v2   bool
}

// newSoakCgroup creates <own>/name in every hierarchy the supervisor will
// use; it finds them as proc/cgroups does (a v2 root, else the v1
// hierarchies named after our controllers).
func newSoakCgroup(name string) (*soakCgroup, error) {
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	c := &soakCgroup{}
	if exists(filepath.Join(cgroupFS, "cgroup.controllers")) {
		c.v2 = true
		c.dirs = []string{filepath.Join(cgroupFS, own[""], name)}
	} else {
		ents, err := os.ReadDir(cgroupFS)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", cgroupFS, err)
		}
		seen := map[string]bool{}
		for _, e := range ents {
			ctrls := strings.Split(e.Name(), ",")
			i := slices.IndexFunc(ctrls, func(c string) bool { return slices.Contains(v1Controllers, c) })
			if i < 0 {
				continue
			}
			real, err := filepath.EvalSymlinks(filepath.Join(cgroupFS, e.Name()))
			if err != nil || seen[real] || !exists(filepath.Join(real, "cgroup.procs")) {
				continue
			}
			seen[real] = true
			rel, ok := own[ctrls[i]]
			if !ok {
				return nil, fmt.Errorf("/proc/self/cgroup has no line for %s", ctrls[i])
			}
			c.dirs = append(c.dirs, filepath.Join(real, rel, name))
		}
	}
	if len(c.dirs) == 0 {
		return nil, errors.New("no cgroup hierarchy under " + cgroupFS)
	}
	for _, d := range c.dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			c.remove()
			return nil, fmt.Errorf("creating the soak's cgroup: %w", err)
		}
	}
	return c, nil
}

// ownCgroups reads /proc/self/cgroup: controller ("" for v2) → path.
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, sc.Err()
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// procsFiles are the cgroup.procs files the wrapper writes the supervisor's
// pid into before it execs it.
func (c *soakCgroup) procsFiles() []string {
	var out []string
	for _, d := range c.dirs {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

// sandboxDirs lists the sandbox cgroups the supervisor has now (the
// children of its subtree), from every hierarchy, deduplicated by name.
func (c *soakCgroup) sandboxDirs() []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range c.dirs {
		ents, _ := os.ReadDir(filepath.Join(d, subtree))
		for _, e := range ents {
			if e.IsDir() && !seen[e.Name()] {
				seen[e.Name()] = true
				out = append(out, e.Name())
			}
		}
	}
	sort.Strings(out)
	return out
}

// leftovers lists every directory under our cgroups but the v2 leaf, in
// every hierarchy: after the supervisor exited, each is a leaked cgroup.
func (c *soakCgroup) leftovers() []string {
	var out []string
	for _, d := range c.dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() || p == d {
				return nil
			}
			if c.v2 && p == filepath.Join(d, v2Leaf) {
				return nil
			}
			out = append(out, p)
			return nil
		})
	}
	return out
}

// procs lists every pid in our cgroups, at any depth: processes of the run,
// wherever they went.
func (c *soakCgroup) procs() []int {
	seen := map[int]bool{}
	for _, d := range c.dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	sort.Ints(out)
	return out
}

// remove kills whatever is still in our cgroups (only the run's processes
// can be there) and removes the directories, deepest first. It is the
// cleanup after a failed run as much as after a good one.
func (c *soakCgroup) remove() {
	for range 50 {
		c.thaw() // a frozen task would never die of the SIGKILL
		pids := c.procs()
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, d := range c.dirs {
		var dirs []string
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			for range 20 {
				if err := syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, syscall.ENOENT) {
					break
				}
				time.Sleep(50 * time.Millisecond) // EBUSY while the last task exits
			}
		}
	}
}

// thaw thaws every v1 freezer cgroup of ours.
func (c *soakCgroup) thaw() {
	for _, d := range c.dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() && exists(filepath.Join(p, "freezer.state")) {
				_ = os.WriteFile(filepath.Join(p, "freezer.state"), []byte("THAWED"), 0o644)
			}
			return nil
		})
	}
}

// sandboxProcs lists the pids in one sandbox cgroup, from every hierarchy.
func (c *soakCgroup) sandboxProcs(name string) []int {
	seen := map[int]bool{}
	var out []int
	for _, d := range c.dirs {
		b, _ := os.ReadFile(filepath.Join(d, subtree, name, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
				seen[pid] = true
				out = append(out, pid)
			}
		}
	}
	return out
}
