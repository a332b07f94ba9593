//go:build linux

package cgroups

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeKernel emulates cgroupfs on a plain directory, so that mode
// detection, paths, writes and error handling can be tested without root:
// mkdir creates the interface files of the controllers the new group gets,
// writing a missing file fails with ENOENT, enabling a controller the parent
// does not offer fails with ENOENT and in a group with processes with EBUSY,
// moving a pid takes it out of its old group, cgroup.kill empties the group,
// and rmdir of a group with processes or children fails with EBUSY. It
// records every change it is asked for. It cannot enforce any limit.
type fakeKernel struct {
	t    *testing.T
	root string

	noKill bool // v2: no cgroup.kill (kernels before 5.14)
	noSwap bool // no swap accounting files

	mu    sync.Mutex
	ops   []string       // "mkdir REL", "write REL DATA", "rmdir REL"; REL relative to root
	busyN map[string]int // REL → how many more rmdirs of it fail with EBUSY
}

// busy makes the next n rmdirs of rel fail with EBUSY, as the kernel does
// for a cgroup whose last process it has not finished freeing.
func (k *fakeKernel) busy(rel string, n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.busyN == nil {
		k.busyN = map[string]int{}
	}
	k.busyN[rel] = n
}

func newFake(t *testing.T) *fakeKernel {
	return &fakeKernel{t: t, root: t.TempDir()}
}

func (k *fakeKernel) rel(p string) string {
	r, err := filepath.Rel(k.root, p)
	if err != nil {
		k.t.Fatalf("fake cgroupfs: %s is outside %s", p, k.root)
	}
	return r
}

func (k *fakeKernel) log(format ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ops = append(k.ops, strings.Join(format, " "))
}

// Ops returns and forgets the recorded changes.
func (k *fakeKernel) Ops() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	ops := k.ops
	k.ops = nil
	return ops
}

// hierarchy returns the mount directory of p and, for v1, its controllers
// (nil for a cgroup2 hierarchy).
func (k *fakeKernel) hierarchy(p string) (mount string, v1 []string) {
	if exists(filepath.Join(k.root, "cgroup.controllers")) {
		return k.root, nil
	}
	first := strings.Split(k.rel(p), string(filepath.Separator))[0]
	mount = filepath.Join(k.root, first)
	if exists(filepath.Join(mount, "cgroup.controllers")) {
		return mount, nil
	}
	real, err := filepath.EvalSymlinks(mount)
	if err != nil {
		k.t.Fatalf("fake cgroupfs: %v", err)
	}
	return mount, strings.Split(filepath.Base(real), ",")
}

func (k *fakeKernel) put(dir, name, content string) {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		k.t.Fatalf("fake cgroupfs: %v", err)
	}
}

func (k *fakeKernel) Mkdir(p string) error {
	k.log("mkdir", k.rel(p))
	if err := os.Mkdir(p, 0o755); err != nil {
		return err
	}
	k.populate(p)
	return nil
}

// populate writes the interface files the kernel would show in a new group.
func (k *fakeKernel) populate(p string) {
	_, v1 := k.hierarchy(p)
	k.put(p, "cgroup.procs", "")
	if v1 != nil {
		k.put(p, "tasks", "")
		for _, c := range v1 {
			switch c {
			case "memory":
				k.put(p, "memory.limit_in_bytes", "9223372036854771712\n")
				if !k.noSwap {
					k.put(p, "memory.memsw.limit_in_bytes", "9223372036854771712\n")
				}
				k.put(p, "memory.usage_in_bytes", "0\n")
				k.put(p, "memory.max_usage_in_bytes", "0\n")
				k.put(p, "memory.failcnt", "0\n")
				k.put(p, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
			case "cpu":
				k.put(p, "cpu.cfs_period_us", "100000\n")
				k.put(p, "cpu.cfs_quota_us", "-1\n")
			case "cpuacct":
				k.put(p, "cpuacct.usage", "0\n")
			case "pids":
				k.put(p, "pids.max", "max\n")
				k.put(p, "pids.current", "0\n")
			case "freezer":
				k.put(p, "freezer.state", "THAWED\n")
			}
		}
		return
	}
	parentCtl, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cgroup.subtree_control"))
	ctl := strings.Fields(string(parentCtl))
	k.put(p, "cgroup.controllers", strings.Join(ctl, " ")+"\n")
	k.put(p, "cgroup.subtree_control", "\n")
	k.put(p, "cgroup.events", "populated 0\nfrozen 0\n")
	k.put(p, "cgroup.freeze", "0\n")
	if !k.noKill {
		k.put(p, "cgroup.kill", "")
	}
	k.put(p, "cpu.stat", "usage_usec 0\nuser_usec 0\nsystem_usec 0\n")
	for _, c := range ctl {
		k.populateController(p, c)
	}
}

func (k *fakeKernel) populateController(p, c string) {
	switch c {
	case "memory":
		k.put(p, "memory.max", "max\n")
		k.put(p, "memory.current", "0\n")
		k.put(p, "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n")
		if !k.noSwap {
			k.put(p, "memory.swap.max", "max\n")
		}
	case "pids":
		k.put(p, "pids.max", "max\n")
		k.put(p, "pids.current", "0\n")
	case "cpu":
		k.put(p, "cpu.max", "max 100000\n")
	}
}

func werr(p string, errno unix.Errno) error { return &fs.PathError{Op: "write", Path: p, Err: errno} }

func (k *fakeKernel) Write(p, data string) error {
	k.log("write", k.rel(p), data)
	if !exists(p) {
		return &fs.PathError{Op: "open", Path: p, Err: unix.ENOENT}
	}
	dir := filepath.Dir(p)
	switch filepath.Base(p) {
	case "cgroup.procs":
		if _, err := strconv.Atoi(data); err != nil {
			return werr(p, unix.EINVAL)
		}
		mount, _ := k.hierarchy(p)
		// A pid is in one group per hierarchy: take it out of its old one.
		filepath.WalkDir(mount, func(q string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "cgroup.procs" {
				pids, _ := os.ReadFile(q)
				kept := slices.DeleteFunc(strings.Fields(string(pids)), func(s string) bool { return s == data })
				k.put(filepath.Dir(q), "cgroup.procs", strings.Join(append(kept, ""), "\n"))
			}
			return nil
		})
		old, _ := os.ReadFile(p)
		k.put(dir, "cgroup.procs", string(old)+data+"\n")
	case "cgroup.subtree_control":
		c, ok := strings.CutPrefix(data, "+")
		if !ok || strings.Contains(c, " ") {
			return werr(p, unix.EINVAL)
		}
		avail, _ := readWords(filepath.Join(dir, "cgroup.controllers"))
		if !contains(avail, c) {
			return werr(p, unix.ENOENT)
		}
		mount, _ := k.hierarchy(p)
		if pids, _ := readProcs(filepath.Join(dir, "cgroup.procs")); dir != mount && len(pids) > 0 {
			return werr(p, unix.EBUSY)
		}
		cur, _ := readWords(p)
		if !contains(cur, c) {
			cur = append(cur, c)
		}
		k.put(dir, "cgroup.subtree_control", strings.Join(cur, " ")+"\n")
		// Children see the new controller at once, with its files.
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				child := filepath.Join(dir, e.Name())
				k.put(child, "cgroup.controllers", strings.Join(cur, " ")+"\n")
				k.populateController(child, c)
			}
		}
	case "cgroup.kill":
		k.put(dir, "cgroup.procs", "")
	case "cgroup.freeze":
		k.put(dir, "cgroup.freeze", data+"\n")
		k.put(dir, "cgroup.events", "populated 0\nfrozen "+data+"\n")
	default:
		k.put(dir, filepath.Base(p), data+"\n")
	}
	return nil
}

func (k *fakeKernel) Rmdir(p string) error {
	k.log("rmdir", k.rel(p))
	k.mu.Lock()
	n := k.busyN[k.rel(p)]
	if n > 0 {
		k.busyN[k.rel(p)] = n - 1
	}
	k.mu.Unlock()
	if n > 0 {
		return &fs.PathError{Op: "rmdir", Path: p, Err: unix.EBUSY}
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return &fs.PathError{Op: "rmdir", Path: p, Err: unix.ENOENT}
	}
	for _, e := range entries {
		if e.IsDir() {
			return &fs.PathError{Op: "rmdir", Path: p, Err: unix.EBUSY}
		}
	}
	if pids, _ := readProcs(filepath.Join(p, "cgroup.procs")); len(pids) > 0 {
		return &fs.PathError{Op: "rmdir", Path: p, Err: unix.EBUSY}
	}
	return os.RemoveAll(p)
}

// Layouts. Each returns the fake and a /proc/self/cgroup file for Options.

// layoutV2 makes a cgroup2 root offering ctrls, with ctrls enabled in its
// subtree_control (as systemd leaves it), and own as the supervisor's group
// holding pid 4242 (the test's stand-in for the supervisor).
func layoutV2(t *testing.T, ctrls, own string) (*fakeKernel, string) {
	k := newFake(t)
	k.put(k.root, "cgroup.controllers", ctrls+"\n")
	k.put(k.root, "cgroup.subtree_control", ctrls+"\n")
	k.put(k.root, "cgroup.procs", "1\n")
	// Ancestors of own enable everything for their children, as a
	// Delegate=yes service finds them.
	p := k.root
	for _, part := range strings.Split(strings.Trim(own, "/"), "/") {
		if part == "" {
			continue
		}
		p = filepath.Join(p, part)
		if err := k.Mkdir(p); err != nil {
			t.Fatal(err)
		}
		if p != filepath.Join(k.root, own) {
			k.put(p, "cgroup.subtree_control", ctrls+"\n")
		}
	}
	if own != "/" {
		k.put(p, "cgroup.procs", "4242\n")
	}
	k.Ops()
	return k, k.selfFile("0::" + own + "\n")
}

// layoutV1 makes v1 hierarchies, one per name ("cpu,cpuacct" co-mounts;
// links maps a symlink name to its target), and a self file.
func layoutV1(t *testing.T, names []string, links map[string]string, self string) (*fakeKernel, string) {
	k := newFake(t)
	for _, n := range names {
		d := filepath.Join(k.root, n)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		k.put(d, "cgroup.procs", "1\n")
		k.put(d, "tasks", "1\n")
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(k.root, l)); err != nil {
			t.Fatal(err)
		}
	}
	return k, k.selfFile(self)
}

// addUnified adds a controller-less cgroup2 at root/unified (a hybrid host).
func (k *fakeKernel) addUnified(ctrls string) {
	u := filepath.Join(k.root, "unified")
	if err := os.Mkdir(u, 0o755); err != nil {
		k.t.Fatal(err)
	}
	k.put(u, "cgroup.controllers", ctrls+"\n")
	k.put(u, "cgroup.subtree_control", "\n")
	k.put(u, "cgroup.procs", "1\n")
}

func (k *fakeKernel) selfFile(content string) string {
	p := filepath.Join(k.t.TempDir(), "cgroup")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		k.t.Fatal(err)
	}
	return p
}

func (k *fakeKernel) open(t *testing.T, self string, opts Options) *Root {
	t.Helper()
	opts.FSRoot, opts.SelfCgroupFile, opts.kernel, opts.pid = k.root, self, k, 4242
	r, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

func (k *fakeKernel) read(rel string) string {
	b, err := os.ReadFile(filepath.Join(k.root, rel))
	if err != nil {
		k.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func (k *fakeKernel) exists(rel string) bool { return exists(filepath.Join(k.root, rel)) }
