//go:build linux

package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// killStrategy is how Kill gets every process of a group at once.
type killStrategy int

const (
	// killFile: v2 cgroup.kill (Linux 5.14+) kills the whole group
	// atomically, forks included.
	killFile killStrategy = iota
	// killFreeze: freeze the group (v2 cgroup.freeze, v1 freezer.state) so
	// nothing forks, SIGKILL every member, thaw so the signals land.
	killFreeze
	// killSignals: SIGKILL the members listed in cgroup.procs, again and
	// again until the list stays empty. A fork loop can outrun one round
	// but not all of them: each round kills what the last one missed.
	killSignals
)

func (s killStrategy) String() string {
	return [...]string{"cgroup.kill", "freeze", "signals"}[s]
}

// freezeWait bounds the wait for a group to report itself frozen; past it we
// kill anyway (a task stuck in the kernel may keep a group FREEZING).
const freezeWait = 2 * time.Second

// strategy picks the best way this host offers.
func (c *Cgroup) strategy() killStrategy {
	switch {
	case c.root.mode == ModeV2 && exists(filepath.Join(c.dirs[0], "cgroup.kill")):
		return killFile
	case c.root.mode == ModeV2 && exists(filepath.Join(c.dirs[0], "cgroup.freeze")):
		return killFreeze
	case c.root.mode == ModeV1 && c.dir("freezer") != "":
		return killFreeze
	}
	return killSignals
}

// Kill SIGKILLs every process in the cgroup, daemonized descendants
// included, and returns once the cgroup is empty: v2 through cgroup.kill, or
// else by freezing it, killing and thawing; v1 through the freezer when it is
// mounted, or else by repeated SIGKILL rounds. It fails when processes are
// still left after Options.KillTimeout. Exited processes need not be reaped
// for the cgroup to count as empty.
func (c *Cgroup) Kill() error {
	return c.kill(c.strategy())
}

func (c *Cgroup) kill(s killStrategy) error {
	deadline := time.Now().Add(c.root.killTimeout)
	wrap := func(err error) error { return fmt.Errorf("cgroups: killing %q (%v): %w", c.name, s, err) }
	// Nothing gets into a cgroup but by a member's fork or a move, so an
	// empty one stays empty: skip the freeze/kill round trip (the common
	// case when a sandbox is deleted after its program exited).
	if pids, err := c.Procs(); err == nil && len(pids) == 0 {
		return nil
	}
	switch s {
	case killFile:
		if err := c.root.k.Write(filepath.Join(c.dirs[0], "cgroup.kill"), "1"); err != nil {
			return wrap(err)
		}
	case killFreeze:
		if err := c.freezeKillThaw(deadline); err != nil {
			return wrap(err)
		}
	}
	// Wait until empty. Every round re-sends SIGKILL to whatever is still
	// listed: a no-op for the dying, the end for anything the first pass
	// could not reach.
	for p := newPoller(); ; p.wait() {
		pids, err := c.Procs()
		if err != nil {
			if c.gone() {
				return nil
			}
			return wrap(err)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return wrap(fmt.Errorf("%d processes left after %v: %v", len(pids), c.root.killTimeout, pids))
		}
		c.signalAll(pids)
	}
}

func (c *Cgroup) freezeKillThaw(deadline time.Time) error {
	var file, frozen, thawed string
	var isFrozen func() bool
	if c.root.mode == ModeV2 {
		file, frozen, thawed = filepath.Join(c.dirs[0], "cgroup.freeze"), "1", "0"
		events := filepath.Join(c.dirs[0], "cgroup.events")
		isFrozen = func() bool {
			v, ok, err := readKeyed(events, "frozen")
			return err == nil && ok && v == 1
		}
	} else {
		file, frozen, thawed = filepath.Join(c.dir("freezer"), "freezer.state"), "FROZEN", "THAWED"
		isFrozen = func() bool {
			s, err := readString(file)
			return err == nil && s == "FROZEN"
		}
	}
	if err := c.root.k.Write(file, frozen); err != nil {
		return fmt.Errorf("freezing: %w", err)
	}
	until := time.Now().Add(freezeWait)
	if until.After(deadline) {
		until = deadline
	}
	for p := newPoller(); !isFrozen() && time.Now().Before(until); p.wait() {
	}
	// Frozen tasks cannot fork or exit; the SIGKILLs land on thaw.
	pids, err := c.Procs()
	if err == nil {
		c.signalAll(pids)
	}
	if terr := c.root.k.Write(file, thawed); terr != nil {
		return errors.Join(err, fmt.Errorf("thawing: %w", terr))
	}
	return err
}

// signalAll sends SIGKILL to each pid that is still a member of the cgroup.
// The pid is pinned with a pidfd before its membership is checked, so a pid
// that was reused after cgroup.procs was read is never signalled.
func (c *Cgroup) signalAll(pids []int) {
	h := c.hiers[0]
	key := ""
	if c.root.mode == ModeV1 {
		key = h.controllers[0]
	}
	want := cleanRel(h.rel + "/" + c.name)
	for _, pid := range pids {
		killMember(pid, key, want)
	}
}

func killMember(pid int, key, want string) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		// Before Linux 5.3: no way to pin the pid; fall back to kill(2).
		if isMember(pid, key, want) {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		return
	}
	if err != nil {
		return // ESRCH: already gone
	}
	defer unix.Close(fd)
	if isMember(pid, key, want) {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
}

func isMember(pid int, key, want string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	m, err := parseProcCgroup(b)
	if err != nil {
		return false
	}
	p, ok := m[key]
	return ok && cleanRel(p) == want
}

// poller spaces out polls of kernel state: 1 ms, doubling up to 50 ms.
type poller struct{ d time.Duration }

func newPoller() *poller { return &poller{d: time.Millisecond} }

func (p *poller) wait() {
	time.Sleep(p.d)
	if p.d *= 2; p.d > 50*time.Millisecond {
		p.d = 50 * time.Millisecond
	}
}
