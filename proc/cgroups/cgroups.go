//go:build linux

package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Mode is the kind of cgroup hierarchy in use.
type Mode int

const (
	// ModeDetect, the zero value, asks Open to find out.
	ModeDetect Mode = iota
	// ModeNone: no usable hierarchy; Create always fails with ErrUnavailable.
	ModeNone
	// ModeV1: one hierarchy per controller (memory, cpu, cpuacct, pids,
	// freezer). A hybrid host (v1 controllers plus a controller-less cgroup2
	// at <root>/unified) is ModeV1.
	ModeV1
	// ModeV2: the unified hierarchy.
	ModeV2
)

func (m Mode) String() string {
	switch m {
	case ModeDetect:
		return "detect"
	case ModeNone:
		return "none"
	case ModeV1:
		return "v1"
	case ModeV2:
		return "v2"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// DefaultFSRoot is where cgroupfs is mounted on every mainstream distribution.
const DefaultFSRoot = "/sys/fs/cgroup"

const (
	// subtreeName is the default subtree under the supervisor's own cgroup.
	subtreeName = "supervise"
	// leafName is the leaf a v2 supervisor moves itself into, so that its own
	// cgroup holds no process and may enable controllers for its children.
	leafName = "supervisor"
	// cpuPeriod is the CFS period we write with every quota, in µs.
	cpuPeriod = 100000
	// minCPUQuota is the kernel's smallest accepted quota (1 ms), in µs.
	minCPUQuota = 1000

	defaultKillTimeout = 10 * time.Second
)

// ErrUnavailable is matched (errors.Is) by every error that means "this host
// cannot give what was asked": no hierarchy at all, or a limit whose
// controller is missing. See ControllerError.
var ErrUnavailable = errors.New("cgroups: not available")

// ControllerError reports a limit asked of a controller that is not available
// to our subtree.
type ControllerError struct {
	Controller string // memory, cpu or pids
	Reason     string // what was found instead, naming the file or directory
}

func (e *ControllerError) Error() string {
	return "cgroups: " + e.Controller + " controller not available: " + e.Reason
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *ControllerError) Is(target error) bool { return target == ErrUnavailable }

// Resources are the limits of one cgroup. Zero means no limit.
type Resources struct {
	MemoryMax int64   // bytes; memory+swap, a limited group does not swap
	CPUMax    float64 // cores, enforced as a CFS quota per 100 ms period
	PidsMax   int64   // tasks (threads count)
}

// Any reports whether any limit is set.
func (r Resources) Any() bool { return r.MemoryMax != 0 || r.CPUMax != 0 || r.PidsMax != 0 }

func (r Resources) validate() error {
	if r.MemoryMax < 0 {
		return fmt.Errorf("memory limit %d is negative", r.MemoryMax)
	}
	if r.CPUMax < 0 || math.IsNaN(r.CPUMax) || math.IsInf(r.CPUMax, 0) {
		return fmt.Errorf("cpu limit %v is not a positive number of cores", r.CPUMax)
	}
	if r.PidsMax < 0 {
		return fmt.Errorf("pids limit %d is negative", r.PidsMax)
	}
	return nil
}

// cpuQuota converts cores to a CFS quota in µs per cpuPeriod.
func cpuQuota(cores float64) int64 {
	q := int64(math.Round(cores * cpuPeriod))
	if q < minCPUQuota {
		q = minCPUQuota
	}
	return q
}

// Options configure Open.
type Options struct {
	// FSRoot is where cgroupfs is mounted; default DefaultFSRoot.
	FSRoot string
	// Path is our subtree, relative to each hierarchy's root. Empty means
	// "<own cgroup>/supervise", with the own cgroup read per hierarchy from
	// SelfCgroupFile (on v1 it differs between controllers).
	Path string
	// Mode forces a mode; ModeDetect (0) detects it from FSRoot.
	Mode Mode
	// SelfCgroupFile lists the supervisor's own cgroups; default
	// /proc/self/cgroup.
	SelfCgroupFile string
	// KillTimeout bounds Kill and Delete; default 10s.
	KillTimeout time.Duration

	kernel kernel // nil: the real cgroupfs
	pid    int    // 0: os.Getpid(); who moves into the v2 leaf
}

// Root is our subtree in every hierarchy in use. Its methods are safe for
// concurrent use; Close must not race with Create.
type Root struct {
	mode        Mode
	fsroot      string
	k           kernel
	killTimeout time.Duration

	hiers  []*hierarchy          // memory's first on v1; exactly one on v2
	byCtrl map[string]*hierarchy // v1 only: controller → its hierarchy

	leaf string // v2: the leaf the supervisor moved into, or ""
	// shared: the subtree is the default "<own>/supervise", supervise's by
	// name, which supervisors started in the same cgroup share.
	shared bool

	mu      sync.Mutex
	created []string         // directories we made for the subtree, in order of creation; guarded by mu
	mine    map[string]bool  // directories of the cgroups Create made and Delete has not removed; guarded by mu
	enable  map[string]error // v2: controller → why it could not be enabled; guarded by mu
}

// hierarchy is one mounted hierarchy and our subtree in it.
type hierarchy struct {
	mount       string   // absolute directory of the hierarchy's root
	controllers []string // v1: the controllers bound to it (of those we use)
	rel         string   // our subtree inside it, "/a/b"
}

func (h *hierarchy) dir() string { return filepath.Join(h.mount, h.rel) }

func (h *hierarchy) has(ctrl string) bool { return contains(h.controllers, ctrl) }

// v1Controllers are the v1 hierarchies we use: limits, stats and the freezer
// for Kill.
var v1Controllers = []string{"memory", "cpu", "cpuacct", "pids", "freezer"}

// v2Controllers are enabled for our subtree where the parent offers them.
var v2Controllers = []string{"cpu", "memory", "pids"}

// Open detects the mode and creates our subtree, remembering which
// directories it made. On v2, when the subtree is below the supervisor's own
// non-root cgroup (the default), the supervisor first moves itself into the
// leaf "<own>/supervisor": a cgroup that holds processes cannot enable
// controllers for its children (the "no internal processes" rule that
// systemd's Delegate=yes services run into). It then enables cpu, memory and
// pids in each cgroup of our subtree where the parent offers them; what could
// not be enabled is reported by Create when a limit needs it.
//
// An error from Open means cgroups are not usable by this process (no
// permission, a broken mount). A host without any hierarchy is not an error:
// the Root has ModeNone.
func Open(opts Options) (*Root, error) {
	if opts.FSRoot == "" {
		opts.FSRoot = DefaultFSRoot
	}
	if opts.SelfCgroupFile == "" {
		opts.SelfCgroupFile = "/proc/self/cgroup"
	}
	if opts.KillTimeout <= 0 {
		opts.KillTimeout = defaultKillTimeout
	}
	if opts.kernel == nil {
		opts.kernel = realKernel{}
	}
	if opts.pid == 0 {
		opts.pid = os.Getpid()
	}
	r := &Root{
		fsroot:      opts.FSRoot,
		k:           opts.kernel,
		killTimeout: opts.KillTimeout,
		byCtrl:      make(map[string]*hierarchy),
		enable:      make(map[string]error),
		mine:        make(map[string]bool),
		shared:      opts.Path == "",
	}
	mode, v2mount, v1 := detect(opts.FSRoot)
	switch opts.Mode {
	case ModeDetect:
	case ModeNone:
		mode = ModeNone
	case ModeV1:
		if len(v1) == 0 {
			return nil, fmt.Errorf("cgroups: no v1 hierarchy of %s under %s: %w",
				strings.Join(v1Controllers, ", "), opts.FSRoot, ErrUnavailable)
		}
		mode = ModeV1
	case ModeV2:
		if v2mount == "" {
			return nil, fmt.Errorf("cgroups: no cgroup2 hierarchy at %s or %s: %w",
				opts.FSRoot, filepath.Join(opts.FSRoot, "unified"), ErrUnavailable)
		}
		mode = ModeV2
	default:
		return nil, fmt.Errorf("cgroups: unknown mode %d", opts.Mode)
	}
	r.mode = mode

	var err error
	switch mode {
	case ModeV1:
		err = r.openV1(opts, v1)
	case ModeV2:
		err = r.openV2(opts, v2mount)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// detect finds a cgroup2 mount (FSRoot itself, or a hybrid's
// FSRoot/unified) and the v1 hierarchies under FSRoot, and picks the mode: a
// v2 root wins, then any v1 controller, then a cgroup2 mount beside no v1
// controller at all.
func detect(fsroot string) (mode Mode, v2mount string, v1 []*hierarchy) {
	if exists(filepath.Join(fsroot, "cgroup.controllers")) {
		return ModeV2, fsroot, nil
	}
	if u := filepath.Join(fsroot, "unified"); exists(filepath.Join(u, "cgroup.controllers")) {
		v2mount = u
	}
	v1 = findV1(fsroot)
	switch {
	case len(v1) > 0:
		return ModeV1, v2mount, v1
	case v2mount != "":
		return ModeV2, v2mount, nil
	}
	return ModeNone, "", nil
}

// findV1 lists the v1 hierarchies under fsroot that carry a controller we
// use. Co-mounted controllers ("cpu,cpuacct", with "cpu" and "cpuacct" as
// symlinks to it) are one hierarchy.
func findV1(fsroot string) []*hierarchy {
	entries, err := os.ReadDir(fsroot)
	if err != nil {
		return nil
	}
	realRoot, err := filepath.EvalSymlinks(fsroot)
	if err != nil {
		return nil
	}
	seen := make(map[string]bool)
	var hs []*hierarchy
	for _, e := range entries {
		if !wantsV1(e.Name()) {
			continue
		}
		real, err := filepath.EvalSymlinks(filepath.Join(fsroot, e.Name()))
		if err != nil || seen[real] {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() || !exists(filepath.Join(real, "cgroup.procs")) {
			continue
		}
		seen[real] = true
		name := filepath.Base(real)
		mount := filepath.Join(fsroot, e.Name())
		if filepath.Dir(real) == realRoot {
			mount = filepath.Join(fsroot, name) // prefer "cpu,cpuacct" over the "cpu" symlink
		}
		h := &hierarchy{mount: mount}
		for _, c := range strings.Split(name, ",") {
			if contains(v1Controllers, c) {
				h.controllers = append(h.controllers, c)
			}
		}
		if len(h.controllers) > 0 {
			hs = append(hs, h)
		}
	}
	// memory first: it is what Path reports; then a stable order.
	sort.SliceStable(hs, func(i, j int) bool {
		mi, mj := hs[i].has("memory"), hs[j].has("memory")
		if mi != mj {
			return mi
		}
		return hs[i].mount < hs[j].mount
	})
	return hs
}

func wantsV1(name string) bool {
	for _, c := range strings.Split(name, ",") {
		if contains(v1Controllers, c) {
			return true
		}
	}
	return false
}

func (r *Root) openV1(opts Options, hs []*hierarchy) error {
	var own map[string]string
	if opts.Path == "" {
		var err error
		if own, err = ownCgroups(opts.SelfCgroupFile); err != nil {
			return fmt.Errorf("cgroups: reading own cgroups: %w", err)
		}
	}
	for _, h := range hs {
		if opts.Path != "" {
			h.rel = cleanRel(opts.Path)
		} else {
			p, ok := "", false
			for _, c := range h.controllers {
				if p, ok = own[c]; ok {
					break
				}
			}
			if !ok {
				return fmt.Errorf("cgroups: %s lists no cgroup for %s", opts.SelfCgroupFile, h.mount)
			}
			h.rel = cleanRel(p + "/" + subtreeName)
		}
		if err := r.mkdirAll(h.mount, h.rel); err != nil {
			return err
		}
		for _, c := range h.controllers {
			if r.byCtrl[c] == nil {
				r.byCtrl[c] = h
			}
		}
		r.hiers = append(r.hiers, h)
	}
	return nil
}

func (r *Root) openV2(opts Options, mount string) error {
	ownRel, known, inLeaf, err := ownV2Cgroup(opts)
	if err != nil {
		return err
	}
	h := &hierarchy{mount: mount, rel: cleanRel(opts.Path)}
	if opts.Path == "" {
		h.rel = cleanRel(ownRel + "/" + subtreeName)
	}
	manageOwn := known && under(ownRel, h.rel)
	if manageOwn && ownRel != "/" {
		if err := r.enterLeaf(filepath.Join(mount, ownRel, leafName), inLeaf, opts.pid); err != nil {
			return err
		}
	}

	firstCreated := len(r.created)
	if err := r.mkdirAll(mount, h.rel); err != nil {
		return err
	}
	// Enable controllers top-down in every cgroup we manage: from our own
	// cgroup down when the subtree is below it, else only in what we created
	// and the subtree's root. Cgroups above are not ours to change.
	dirs := []string{h.rel}
	switch {
	case manageOwn:
		dirs = ancestors(h.rel, func(p string) bool { return p == ownRel })
	case len(r.created) > firstCreated:
		top := r.created[firstCreated]
		dirs = ancestors(h.rel, func(p string) bool { return filepath.Join(mount, p) == top })
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		r.enableControllers(filepath.Join(mount, dirs[i]))
	}
	r.hiers = []*hierarchy{h}
	return nil
}

// ownV2Cgroup reads the supervisor's own cgroup v2 path; known is false
// when it is not listed and a subtree path was given, which then does not
// need it.
func ownV2Cgroup(opts Options) (ownRel string, known, inLeaf bool, err error) {
	own, err := ownCgroups(opts.SelfCgroupFile)
	if err != nil && opts.Path == "" {
		return "", false, false, fmt.Errorf("cgroups: reading own cgroup: %w", err)
	}
	ownRel, known = own[""]
	if !known && opts.Path == "" {
		return "", false, false, fmt.Errorf("cgroups: %s lists no cgroup2 entry", opts.SelfCgroupFile)
	}
	ownRel = cleanRel(ownRel)
	if ownRel != "/" && filepath.Base(ownRel) == leafName {
		// A supervisor re-executed in place is already in its leaf: the
		// delegated cgroup is the parent.
		return filepath.Dir(ownRel), known, true, nil
	}
	return ownRel, known, false, nil
}

// enterLeaf creates the supervisor's leaf cgroup and moves it there (a
// cgroup with children in use may hold no processes itself).
func (r *Root) enterLeaf(leaf string, inLeaf bool, pid int) error {
	if !exists(leaf) {
		if err := r.k.Mkdir(leaf); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("cgroups: creating the supervisor's leaf: %w", err)
		}
	}
	r.leaf = leaf
	if inLeaf {
		return nil
	}
	if err := r.k.Write(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
		return fmt.Errorf("cgroups: moving the supervisor into its leaf: %w", err)
	}
	return nil
}

// ancestors lists rel and its parents, up to the first that stop accepts
// or the root.
func ancestors(rel string, stop func(string) bool) []string {
	var dirs []string
	for p := rel; ; p = filepath.Dir(p) {
		dirs = append(dirs, p)
		if stop(p) || p == "/" {
			return dirs
		}
	}
}

// enableControllers writes +cpu, +memory and +pids, one at a time (the
// kernel refuses a whole line if one controller is missing), into
// dir/cgroup.subtree_control where dir offers them; failures are kept for
// Create's error messages. The caller holds mu, or is Open.
func (r *Root) enableControllers(dir string) {
	avail, err := readWords(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return
	}
	cur, _ := readWords(filepath.Join(dir, "cgroup.subtree_control"))
	for _, c := range v2Controllers {
		if !contains(avail, c) || contains(cur, c) {
			continue
		}
		if err := r.k.Write(filepath.Join(dir, "cgroup.subtree_control"), "+"+c); err != nil {
			r.enable[c] = fmt.Errorf("enabling it in %s: %w", dir, err)
		} else {
			delete(r.enable, c)
		}
	}
}

// mkdirAll creates mount/rel and its missing parents, recording each. The
// caller holds mu, or is Open.
func (r *Root) mkdirAll(mount, rel string) error {
	p := mount
	for _, part := range strings.Split(strings.Trim(rel, "/"), "/") {
		if part == "" {
			continue
		}
		p = filepath.Join(p, part)
		if exists(p) {
			continue
		}
		if err := r.k.Mkdir(p); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			return fmt.Errorf("cgroups: creating our subtree: %w", err)
		}
		r.created = append(r.created, p)
	}
	return nil
}

// Mode reports the mode in use.
func (r *Root) Mode() Mode { return r.mode }

// Dirs returns the directory of our subtree in every hierarchy in use.
func (r *Root) Dirs() []string {
	out := make([]string, len(r.hiers))
	for i, h := range r.hiers {
		out[i] = h.dir()
	}
	return out
}

// Close removes our subtree where nothing else uses it: the directories
// we created, deepest first, and the default subtree "<own>/supervise"
// even when another supervisor created it, for the last of the supervisors
// sharing it to remove it. A directory that still holds another's cgroups
// is left to whoever leaves last, which is not an error; one that still
// holds cgroups Create made is (EBUSY). A directory the kernel calls busy
// with no cgroup in it (it frees a cgroup's last process asynchronously)
// is retried, up to Options.KillTimeout. The v2 leaf holding the
// supervisor stays: the supervisor is in it.
func (r *Root) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var dirs []string
	if r.shared {
		for _, h := range r.hiers {
			if !slices.Contains(r.created, h.dir()) {
				dirs = append(dirs, h.dir())
			}
		}
	}
	for i := len(r.created) - 1; i >= 0; i-- {
		dirs = append(dirs, r.created[i])
	}
	var errs []error
	for _, d := range dirs {
		if err := r.removeUnusedLocked(d); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cgroups: removing our subtree: %w", err)
	}
	return nil
}

// removeUnusedLocked removes the directory d of our subtree unless cgroups
// are in it; see Close.
func (r *Root) removeUnusedLocked(d string) error {
	deadline := time.Now().Add(r.killTimeout)
	for p := newPoller(); ; p.wait() {
		err := r.k.Rmdir(d)
		switch {
		case err == nil || isNotExist(err):
			return nil
		case !errors.Is(err, unix.EBUSY):
			return err
		}
		ents, _ := os.ReadDir(d)
		others := false
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			if r.mine[filepath.Join(d, e.Name())] {
				return fmt.Errorf("%w (our cgroup %s is still in it)", err, e.Name())
			}
			others = true
		}
		if others {
			return nil // another supervisor's: the last one out removes it
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

// Children lists the names of the cgroups directly under our subtree in
// any hierarchy in use: those Create made, and those a previous supervisor
// left behind.
func (r *Root) Children() ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, h := range r.hiers {
		ents, err := os.ReadDir(h.dir())
		if isNotExist(err) {
			continue // removed by a supervisor sharing it, as it was empty
		}
		if err != nil {
			return nil, fmt.Errorf("cgroups: listing %s: %w", h.dir(), err)
		}
		for _, e := range ents {
			if e.IsDir() && !seen[e.Name()] {
				seen[e.Name()] = true
				out = append(out, e.Name())
			}
		}
	}
	return out, nil
}

// Existing returns the cgroup name under our subtree that someone else
// created (a previous supervisor), so that it can be deleted.
func (r *Root) Existing(name string) (*Cgroup, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00\n") {
		return nil, fmt.Errorf("cgroups: invalid cgroup name %q", name)
	}
	// A cgroup is in the hierarchies its limits needed (see Create): it
	// is what exists of it.
	c := &Cgroup{root: r, name: name}
	for _, h := range r.hiers {
		if d := filepath.Join(h.dir(), name); exists(d) {
			c.hiers, c.dirs = append(c.hiers, h), append(c.dirs, d)
		}
	}
	if len(c.dirs) == 0 {
		return nil, fmt.Errorf("cgroups: %q: %w", name, fs.ErrNotExist)
	}
	return c, nil
}

// Create makes the cgroup name under our subtree and writes its limits, so
// they hold before any process is placed: on v2 in the one hierarchy, on v1
// in those hiersFor picks. A limit whose controller is missing fails with a
// *ControllerError and leaves nothing behind.
func (r *Root) Create(name string, res Resources) (*Cgroup, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00\n") {
		return nil, fmt.Errorf("cgroups: invalid cgroup name %q", name)
	}
	if err := res.validate(); err != nil {
		return nil, fmt.Errorf("cgroups: creating %q: %w", name, err)
	}
	if r.mode != ModeV1 && r.mode != ModeV2 {
		return nil, fmt.Errorf("cgroups: creating %q: no cgroup hierarchy under %s: %w", name, r.fsroot, ErrUnavailable)
	}
	need := res.controllers()
	if r.mode == ModeV1 {
		for _, c := range need {
			if r.byCtrl[c] == nil {
				return nil, &ControllerError{Controller: c, Reason: "no v1 " + c + " hierarchy under " + r.fsroot}
			}
		}
	}
	c := &Cgroup{root: r, name: name}
	for _, h := range r.hiersFor(need) {
		dir := filepath.Join(h.dir(), name)
		err := r.k.Mkdir(dir)
		// Another supervisor sharing the subtree left while it held none
		// of our cgroups, and removed it (see Close); several leaving one
		// after another may remove it again between our two mkdirs, so
		// the retries are a few, not one.
		for try := 0; isNotExist(err) && try < 8; try++ {
			if err = r.remake(h); err == nil {
				err = r.k.Mkdir(dir)
			}
		}
		if err != nil {
			c.rmdirAll()
			return nil, fmt.Errorf("cgroups: creating %q: %w", name, err)
		}
		c.hiers, c.dirs = append(c.hiers, h), append(c.dirs, dir)
	}
	if err := c.setLimits(res, need); err != nil {
		c.rmdirAll()
		return nil, err
	}
	r.mu.Lock()
	for _, d := range c.dirs {
		r.mine[d] = true
	}
	r.mu.Unlock()
	return c, nil
}

// v1Always are the v1 controllers every cgroup is in, limits or not:
// memory and cpuacct for what a status shows and for OOM kills, cpu for
// each program's own share of the CPU as on v2 (its group competes with the
// supervisor as one), freezer for Kill. pids, where it is a hierarchy of
// its own, only holds a cgroup that sets its limit: there a cgroup would
// only count tasks, which the tasks file of another hierarchy lists too,
// and costs every start a mkdir and a cgroup.procs write under the
// kernel's global cgroup lock.
var v1Always = []string{"memory", "cpu", "cpuacct", "freezer"}

// hiersFor lists the hierarchies a cgroup whose limits need the
// controllers need is made in, in Root.hiers order: on v2 the one; on v1
// each that carries one of v1Always or of need (co-mounted controllers,
// such as "cpu,cpuacct", come together), or the first one when none does.
func (r *Root) hiersFor(need []string) []*hierarchy {
	if r.mode != ModeV1 {
		return r.hiers
	}
	var hs []*hierarchy
	for _, h := range r.hiers {
		for _, c := range h.controllers {
			if contains(v1Always, c) || contains(need, c) {
				hs = append(hs, h)
				break
			}
		}
	}
	if len(hs) == 0 && len(r.hiers) > 0 {
		hs = r.hiers[:1]
	}
	return hs
}

// remake makes our subtree in h again, with the controllers enabled on v2.
func (r *Root) remake(h *hierarchy) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := len(r.created)
	if err := r.mkdirAll(h.mount, h.rel); err != nil {
		return err
	}
	if r.mode == ModeV2 {
		for _, d := range r.created[first:] {
			r.enableControllers(d)
		}
	}
	return nil
}

// enableErr says why ctrl could not be enabled for our subtree (v2), or nil.
func (r *Root) enableErr(ctrl string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.enable[ctrl]
}

// forget drops deleted cgroup directories from those Close must not find.
func (r *Root) forget(dirs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range dirs {
		delete(r.mine, d)
	}
}

// controllers lists the controllers the limits need.
func (r Resources) controllers() []string {
	var cs []string
	if r.MemoryMax > 0 {
		cs = append(cs, "memory")
	}
	if r.CPUMax > 0 {
		cs = append(cs, "cpu")
	}
	if r.PidsMax > 0 {
		cs = append(cs, "pids")
	}
	return cs
}
