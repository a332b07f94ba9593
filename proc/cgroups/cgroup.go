//go:build linux

package cgroups

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup is one sandbox's cgroup: a directory in every hierarchy in use.
// Its methods are safe for concurrent use.
type Cgroup struct {
	root  *Root
	name  string
	hiers []*hierarchy // the hierarchies it is in, a subset of Root.hiers in its order
	dirs  []string     // its directory in each of hiers
}

// Stats are a cgroup's counters. A counter whose controller is missing
// reads 0.
type Stats struct {
	MemoryBytes int64         // v2 memory.current, v1 memory.usage_in_bytes
	MemoryPeak  int64         // Stats only: v2 memory.peak, v1 memory.max_usage_in_bytes (0 when the kernel has none)
	CPUUsage    time.Duration // v2 cpu.stat usage_usec, v1 cpuacct.usage
	Pids        int64         // pids.current: tasks (threads), zombies included
	OOMKills    uint64        // see OOMKills
}

// Name returns the name given to Create.
func (c *Cgroup) Name() string { return c.name }

// Path returns the cgroup's directory: on v2 its only one, on v1 the one in
// the memory hierarchy (or the first hierarchy without memory). Dirs has all.
func (c *Cgroup) Path() string { return c.dirs[0] }

// Dirs returns the cgroup's directory in every hierarchy in use.
func (c *Cgroup) Dirs() []string { return append([]string(nil), c.dirs...) }

// dir returns the cgroup's directory in the hierarchy of ctrl, or "" when
// the cgroup is not in that hierarchy.
func (c *Cgroup) dir(ctrl string) string {
	if c.root.mode == ModeV2 {
		return c.dirs[0]
	}
	for i, h := range c.hiers {
		if h.has(ctrl) {
			return c.dirs[i]
		}
	}
	return ""
}

func (c *Cgroup) setLimits(res Resources, need []string) error {
	if c.root.mode == ModeV2 {
		if err := c.checkControllers(need); err != nil {
			return err
		}
	}
	for _, w := range limitWrites(c.root.mode, res) {
		path := filepath.Join(c.dir(w.ctrl), w.file)
		if w.optional && !exists(path) {
			continue
		}
		if err := c.root.k.Write(path, w.value); err != nil {
			return fmt.Errorf("cgroups: creating %q: setting %s: %w", c.name, w.what, err)
		}
	}
	return nil
}

// checkControllers fails with a ControllerError when a v2 cgroup does not
// offer a controller its limits need, saying why it was not enabled.
func (c *Cgroup) checkControllers(need []string) error {
	file := filepath.Join(c.dirs[0], "cgroup.controllers")
	avail, err := readWords(file)
	if err != nil {
		return fmt.Errorf("cgroups: creating %q: %w", c.name, err)
	}
	for _, ctrl := range need {
		if contains(avail, ctrl) {
			continue
		}
		reason := fmt.Sprintf("%s lists %q", file, strings.Join(avail, " "))
		if e := c.root.enableErr(ctrl); e != nil {
			reason += "; " + e.Error()
		}
		return &ControllerError{Controller: ctrl, Reason: reason}
	}
	return nil
}

// limitWrite is one file write that sets a limit.
type limitWrite struct {
	what, ctrl, file, value string
	optional                bool // written where the file exists (swap accounting may be off)
}

// limitWrites lists the writes that set res, in the order they must go.
func limitWrites(mode Mode, res Resources) []limitWrite {
	var w []limitWrite
	if res.MemoryMax > 0 {
		mem := strconv.FormatInt(res.MemoryMax, 10)
		if mode == ModeV2 {
			w = append(w,
				limitWrite{"memory limit", "memory", "memory.max", mem, false},
				limitWrite{"swap limit", "memory", "memory.swap.max", "0", true})
		} else {
			// memsw (memory+swap) must not go below the memory limit, so
			// the memory limit goes first.
			w = append(w,
				limitWrite{"memory limit", "memory", "memory.limit_in_bytes", mem, false},
				limitWrite{"memory+swap limit", "memory", "memory.memsw.limit_in_bytes", mem, true})
		}
	}
	if res.CPUMax > 0 {
		q := cpuQuota(res.CPUMax)
		if mode == ModeV2 {
			w = append(w, limitWrite{"cpu limit", "cpu", "cpu.max", fmt.Sprintf("%d %d", q, cpuPeriod), false})
		} else {
			w = append(w,
				limitWrite{"cpu period", "cpu", "cpu.cfs_period_us", strconv.Itoa(cpuPeriod), false},
				limitWrite{"cpu limit", "cpu", "cpu.cfs_quota_us", strconv.FormatInt(q, 10), false})
		}
	}
	if res.PidsMax > 0 {
		w = append(w, limitWrite{"pids limit", "pids", "pids.max", strconv.FormatInt(res.PidsMax, 10), false})
	}
	return w
}

// OpenFD opens the cgroup's directory for SysProcAttr.UseCgroupFD (clone3
// CLONE_INTO_CGROUP). The caller closes the fd. v2 only: the kernel refuses
// a v1 directory with EBADF, so on v1 this fails without trying.
func (c *Cgroup) OpenFD() (int, error) {
	if c.root.mode != ModeV2 {
		return -1, fmt.Errorf("cgroups: %q: clone into a cgroup needs cgroup v2 (mode is %v)", c.name, c.root.mode)
	}
	fd, err := unix.Open(c.dirs[0], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("cgroups: opening %s: %w", c.dirs[0], err)
	}
	return fd, nil
}

// AddProc moves process pid (all its threads) into the cgroup in every
// hierarchy. On v1 this is how a process gets in: place it while it is
// stopped, before it runs the program (see the package doc).
func (c *Cgroup) AddProc(pid int) error {
	for _, d := range c.dirs {
		if err := c.root.k.Write(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("cgroups: adding pid %d to %q: %w", pid, c.name, err)
		}
	}
	return nil
}

// Procs returns the processes in the cgroup (in any of its hierarchies),
// sorted. Exited processes are not listed, reaped or not. A directory
// already removed (a cgroup half deleted) has none.
func (c *Cgroup) Procs() ([]int, error) {
	var all []int
	for _, d := range c.dirs {
		pids, err := readProcs(filepath.Join(d, "cgroup.procs"))
		if err != nil && !(isNotExist(err) && !exists(d)) {
			return nil, fmt.Errorf("cgroups: listing %q: %w", c.name, err)
		}
		all = append(all, pids...)
	}
	return sortedUnique(all), nil
}

// Stats reads the cgroup's counters.
func (c *Cgroup) Stats() (Stats, error) {
	s, err := c.Usage()
	if err != nil {
		return Stats{}, err
	}
	peakFile := "memory.peak"
	if c.root.mode != ModeV2 {
		peakFile = "memory.max_usage_in_bytes"
	}
	if s.MemoryPeak, err = c.readOpt("memory", peakFile); err != nil {
		return Stats{}, fmt.Errorf("cgroups: stats of %q: %w", c.name, err)
	}
	if s.Pids, err = c.tasks(); err != nil {
		return Stats{}, fmt.Errorf("cgroups: stats of %q: %w", c.name, err)
	}
	if s.OOMKills, err = c.OOMKills(); err != nil {
		return Stats{}, err
	}
	return s, nil
}

// Usage reads what a status page shows, memory and CPU time: two files,
// where Stats reads four.
func (c *Cgroup) Usage() (Stats, error) {
	var s Stats
	var err error
	if c.root.mode == ModeV2 {
		s.MemoryBytes, err = c.readOpt("memory", "memory.current")
	} else {
		s.MemoryBytes, err = c.readOpt("memory", "memory.usage_in_bytes")
	}
	if err != nil {
		return Stats{}, fmt.Errorf("cgroups: stats of %q: %w", c.name, err)
	}
	if c.root.mode == ModeV2 {
		// cpu.stat exists without the cpu controller (usage is core
		// accounting).
		usec, _, err := readKeyed(filepath.Join(c.dirs[0], "cpu.stat"), "usage_usec")
		if err != nil && !isNotExist(err) {
			return Stats{}, fmt.Errorf("cgroups: stats of %q: %w", c.name, err)
		}
		s.CPUUsage = time.Duration(usec) * time.Microsecond
	} else {
		ns, err := c.readOpt("cpuacct", "cpuacct.usage")
		if err != nil {
			return Stats{}, fmt.Errorf("cgroups: stats of %q: %w", c.name, err)
		}
		s.CPUUsage = time.Duration(ns)
	}
	return s, nil
}

// tasks counts the cgroup's tasks: pids.current, or on v1 without a pids
// limit (the cgroup is not in that hierarchy) the lines of its tasks file,
// which lists the same threads less the zombies.
func (c *Cgroup) tasks() (int64, error) {
	if c.root.mode == ModeV2 || c.dir("pids") != "" {
		return c.readOpt("pids", "pids.current")
	}
	b, err := os.ReadFile(filepath.Join(c.dirs[0], "tasks"))
	if isNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return int64(bytes.Count(b, []byte{'\n'})), nil
}

// readOpt reads an integer file of a controller's directory: 0 when the
// cgroup is not in that controller's hierarchy or the file does not exist.
func (c *Cgroup) readOpt(ctrl, file string) (int64, error) {
	d := c.dir(ctrl)
	if d == "" {
		return 0, nil
	}
	n, err := readInt(filepath.Join(d, file))
	if isNotExist(err) {
		return 0, nil
	}
	return n, err
}

// OOMKills returns how many processes of the cgroup the kernel's OOM killer
// killed: v2 memory.events oom_kill, v1 memory.oom_control oom_kill (kernels
// since 4.13). 0 without a memory controller.
//
// Older v1 kernels have no oom_kill line; then the count is a heuristic: 1
// when the group is under OOM now (under_oom 1), or when it both hit its
// limit (memory.failcnt > 0) and peaked at it (max_usage_in_bytes >= limit).
// That can count a group that hit its limit and got by with reclaim alone.
func (c *Cgroup) OOMKills() (uint64, error) {
	d := c.dir("memory")
	if d == "" {
		return 0, nil
	}
	wrap := func(err error) error { return fmt.Errorf("cgroups: oom count of %q: %w", c.name, err) }
	if c.root.mode == ModeV2 {
		n, _, err := readKeyed(filepath.Join(d, "memory.events"), "oom_kill")
		if err != nil && !isNotExist(err) {
			return 0, wrap(err)
		}
		return n, nil
	}
	file := filepath.Join(d, "memory.oom_control")
	n, found, err := readKeyed(file, "oom_kill")
	if err != nil {
		if isNotExist(err) {
			return 0, nil
		}
		return 0, wrap(err)
	}
	if found {
		return n, nil
	}
	if under, _, err := readKeyed(file, "under_oom"); err != nil {
		return 0, wrap(err)
	} else if under > 0 {
		return 1, nil
	}
	failcnt, err := readInt(filepath.Join(d, "memory.failcnt"))
	if err != nil {
		return 0, wrap(err)
	}
	peak, err := readInt(filepath.Join(d, "memory.max_usage_in_bytes"))
	if err != nil {
		return 0, wrap(err)
	}
	limit, err := readInt(filepath.Join(d, "memory.limit_in_bytes"))
	if err != nil {
		return 0, wrap(err)
	}
	if failcnt > 0 && limit > 0 && peak >= limit {
		return 1, nil
	}
	return 0, nil
}

// Delete kills what is left in the cgroup and removes its directory from
// every hierarchy, retrying while the kernel still reports it busy, bounded
// by Options.KillTimeout. Deleting an already deleted cgroup is not an error.
func (c *Cgroup) Delete() error {
	// The common case is a cgroup already empty (its program exited):
	// then the removal alone does it, without listing what is inside. A
	// populated one refuses (EBUSY) in every hierarchy, as a process is in
	// all of them.
	if c.rmdirAll() == nil {
		c.root.forget(c.dirs)
		return nil
	}
	if !c.gone() {
		if err := c.Kill(); err != nil {
			return fmt.Errorf("cgroups: deleting %q: %w", c.name, err)
		}
	}
	deadline := time.Now().Add(c.root.killTimeout)
	for p := newPoller(); ; {
		err := c.rmdirAll()
		if err == nil {
			c.root.forget(c.dirs)
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("cgroups: deleting %q: %w", c.name, err)
		}
		// EBUSY: a process got in after Kill (a fork racing with it) or
		// the kernel has not finished tearing down an exited one.
		if pids, _ := c.Procs(); len(pids) > 0 {
			c.signalAll(pids)
		}
		p.wait()
	}
}

// DeleteEmpty removes the cgroup if it is empty, and only then: no kill,
// no wait. The kernel refuses to remove a populated cgroup (EBUSY) even
// when the processes in it are in a pid namespace the caller cannot see,
// where Procs lists nothing: it reports false, with no error, then.
func (c *Cgroup) DeleteEmpty() (bool, error) {
	err := c.rmdirAll()
	switch {
	case err == nil:
		c.root.forget(c.dirs)
		return true, nil
	case errors.Is(err, unix.EBUSY):
		return false, nil
	default:
		return false, fmt.Errorf("cgroups: deleting %q: %w", c.name, err)
	}
}

// gone reports whether every directory of the cgroup is already removed.
func (c *Cgroup) gone() bool {
	for _, d := range c.dirs {
		if exists(d) {
			return false
		}
	}
	return true
}

// rmdirAll removes the cgroup's directories; missing ones are fine.
func (c *Cgroup) rmdirAll() error {
	var errs []error
	for _, d := range c.dirs {
		if err := c.root.k.Rmdir(d); err != nil && !isNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
