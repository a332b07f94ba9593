//go:build linux

package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Unit tests against the fake cgroupfs of fake_test.go: no root needed.

const hostV1Self = "9:name=systemd:/\n8:pids:/\n6:freezer:/\n4:memory:/process_api/abc\n2:cpuacct:/\n1:cpu:/\n0::/\n"

var allV1 = []string{"memory", "cpu", "cpuacct", "pids", "freezer", "blkio", "devices"}

func TestParseProcCgroup(t *testing.T) {
	got, err := parseProcCgroup([]byte("12:cpu,cpuacct:/a\n4:memory:/process_api/x\n1:name=systemd:/init.scope\n0::/user.slice\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cpu": "/a", "cpuacct": "/a", "memory": "/process_api/x", "name=systemd": "/init.scope", "": "/user.slice"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := parseProcCgroup([]byte("garbage\n")); err == nil {
		t.Error("malformed line accepted")
	}
}

func TestDetect(t *testing.T) {
	cases := []struct {
		name   string
		layout func(t *testing.T) *fakeKernel
		mode   Mode
		v2at   string // v2 mount relative to root
	}{
		{"v2", func(t *testing.T) *fakeKernel { k, _ := layoutV2(t, "cpu memory pids", "/"); return k }, ModeV2, "."},
		{"v1", func(t *testing.T) *fakeKernel { k, _ := layoutV1(t, allV1, nil, ""); return k }, ModeV1, ""},
		{"hybrid", func(t *testing.T) *fakeKernel {
			k, _ := layoutV1(t, allV1, nil, "")
			k.addUnified("hugetlb")
			return k
		}, ModeV1, "unified"},
		{"unified only", func(t *testing.T) *fakeKernel {
			k, _ := layoutV1(t, []string{"blkio"}, nil, "")
			k.addUnified("cpu memory pids")
			return k
		}, ModeV2, "unified"},
		{"nothing", func(t *testing.T) *fakeKernel { return newFake(t) }, ModeNone, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := tc.layout(t)
			mode, v2, _ := detect(k.root)
			if mode != tc.mode {
				t.Errorf("mode %v, want %v", mode, tc.mode)
			}
			want := ""
			if tc.v2at != "" {
				want = filepath.Join(k.root, tc.v2at)
			}
			if v2 != want {
				t.Errorf("v2 mount %q, want %q", v2, want)
			}
		})
	}
}

func TestOpenForcedModeMismatch(t *testing.T) {
	k, self := layoutV1(t, allV1, nil, hostV1Self)
	_, err := Open(Options{FSRoot: k.root, SelfCgroupFile: self, Mode: ModeV2, kernel: k})
	if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no cgroup2 hierarchy") {
		t.Fatalf("forcing v2 on a v1 host: %v", err)
	}
	k2, self2 := layoutV2(t, "memory", "/")
	_, err = Open(Options{FSRoot: k2.root, SelfCgroupFile: self2, Mode: ModeV1, kernel: k2})
	if err == nil || !strings.Contains(err.Error(), "no v1 hierarchy") {
		t.Fatalf("forcing v1 on a v2 host: %v", err)
	}
	// Forcing v2 on a hybrid host uses <root>/unified.
	k.addUnified("hugetlb")
	r := k.open(t, self, Options{Mode: ModeV2, Path: "t"})
	defer r.Close()
	if r.Mode() != ModeV2 || r.Dirs()[0] != filepath.Join(k.root, "unified", "t") {
		t.Fatalf("mode %v dirs %v", r.Mode(), r.Dirs())
	}
}

func TestModeNone(t *testing.T) {
	k := newFake(t)
	r := k.open(t, k.selfFile("0::/\n"), Options{})
	if r.Mode() != ModeNone {
		t.Fatalf("mode %v, want none", r.Mode())
	}
	for _, res := range []Resources{{}, {MemoryMax: 1 << 20}} {
		if _, err := r.Create("x", res); !errors.Is(err, ErrUnavailable) {
			t.Errorf("Create(%+v) on no hierarchy: %v, want ErrUnavailable", res, err)
		}
	}
	if err := r.Close(); err != nil {
		t.Error(err)
	}
}

// A systemd service (Delegate=yes) on v2: the supervisor moves into a leaf
// and enables controllers in its own cgroup and the subtree.
func TestOpenV2SystemdLeaf(t *testing.T) {
	own := "/system.slice/supervise.service"
	k, self := layoutV2(t, "cpuset cpu io memory pids", own)
	r := k.open(t, self, Options{})
	wantOps := []string{
		"mkdir system.slice/supervise.service/supervisor",
		"write system.slice/supervise.service/supervisor/cgroup.procs 4242",
		"mkdir system.slice/supervise.service/supervise",
		"write system.slice/supervise.service/cgroup.subtree_control +cpu",
		"write system.slice/supervise.service/cgroup.subtree_control +memory",
		"write system.slice/supervise.service/cgroup.subtree_control +pids",
		"write system.slice/supervise.service/supervise/cgroup.subtree_control +cpu",
		"write system.slice/supervise.service/supervise/cgroup.subtree_control +memory",
		"write system.slice/supervise.service/supervise/cgroup.subtree_control +pids",
	}
	if got := k.Ops(); !reflect.DeepEqual(got, wantOps) {
		t.Fatalf("Open ops:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantOps, "\n"))
	}
	if got := k.read(own + "/cgroup.procs"); got != "" {
		t.Errorf("own cgroup still holds %q", got)
	}
	if got := k.read(own + "/supervisor/cgroup.procs"); got != "4242" {
		t.Errorf("leaf holds %q", got)
	}
	if r.Dirs()[0] != filepath.Join(k.root, own, "supervise") {
		t.Errorf("subtree %v", r.Dirs())
	}

	cg, err := r.Create("web", Resources{MemoryMax: 32 << 20, CPUMax: 0.2, PidsMax: 20})
	if err != nil {
		t.Fatal(err)
	}
	if got := k.read(own + "/supervise/web/cgroup.controllers"); got != "cpu memory pids" {
		t.Errorf("sandbox controllers %q", got)
	}
	if err := cg.Delete(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if k.exists(own+"/supervise") || !k.exists(own+"/supervisor") || !k.exists(own) {
		t.Error("Close must remove the subtree and keep the leaf and the own cgroup")
	}
}

// Re-executed in place, the supervisor finds itself in its leaf already and
// must not nest another one.
func TestOpenV2AlreadyInLeaf(t *testing.T) {
	own := "/system.slice/supervise.service"
	k, _ := layoutV2(t, "cpu memory pids", own)
	r := k.open(t, k.selfFile("0::/system.slice/supervise.service\n"), Options{})
	r.Close()
	k.Ops()
	r = k.open(t, k.selfFile("0::"+own+"/supervisor\n"), Options{})
	defer r.Close()
	for _, op := range k.Ops() {
		if strings.Contains(op, "cgroup.procs") || strings.Contains(op, "supervisor/supervis") {
			t.Errorf("unexpected %q", op)
		}
	}
	if r.Dirs()[0] != filepath.Join(k.root, own, "supervise") {
		t.Errorf("subtree %v", r.Dirs())
	}
}

// An explicit Path outside the own cgroup: nothing above what we create is
// changed, and the supervisor does not move.
func TestOpenV2ExplicitPath(t *testing.T) {
	k, self := layoutV2(t, "cpu memory pids", "/user.slice/session-1.scope")
	r := k.open(t, self, Options{Path: "supervise-test-1/x"})
	want := []string{
		"mkdir supervise-test-1",
		"mkdir supervise-test-1/x",
		"write supervise-test-1/cgroup.subtree_control +cpu",
		"write supervise-test-1/cgroup.subtree_control +memory",
		"write supervise-test-1/cgroup.subtree_control +pids",
		"write supervise-test-1/x/cgroup.subtree_control +cpu",
		"write supervise-test-1/x/cgroup.subtree_control +memory",
		"write supervise-test-1/x/cgroup.subtree_control +pids",
	}
	if got := k.Ops(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ops:\n%s", strings.Join(got, "\n"))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := k.Ops(); !reflect.DeepEqual(got, []string{"rmdir supervise-test-1/x", "rmdir supervise-test-1"}) {
		t.Fatalf("Close ops %v", got)
	}
}

// Another process shares the own cgroup (a login shell's scope): the move
// cannot empty it, enabling fails with EBUSY, and a limit then fails with
// an error that says why.
func TestOpenV2EnableBusy(t *testing.T) {
	own := "/user.slice/session-1.scope"
	k, self := layoutV2(t, "cpu memory pids", own)
	k.put(filepath.Join(k.root, own), "cgroup.procs", "777\n4242\n")
	r := k.open(t, self, Options{})
	defer r.Close()
	_, err := r.Create("web", Resources{MemoryMax: 64 << 20})
	var ce *ControllerError
	if !errors.As(err, &ce) || ce.Controller != "memory" || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Create: %v", err)
	}
	for _, s := range []string{"cgroups: memory controller not available: ", "web/cgroup.controllers lists \"\"", "enabling it in ", "device or resource busy"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if k.exists(own + "/supervise/web") {
		t.Error("failed Create left its directory")
	}
	cg, err := r.Create("plain", Resources{})
	if err != nil {
		t.Fatalf("Create without limits: %v", err)
	}
	cg.Delete()
}

func TestCreateV2Limits(t *testing.T) {
	k, self := layoutV2(t, "cpu memory pids", "/")
	r := k.open(t, self, Options{Path: "st"})
	defer r.Close()
	k.Ops()
	cg, err := r.Create("web", Resources{MemoryMax: 32 << 20, CPUMax: 0.2, PidsMax: 20})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"mkdir st/web",
		"write st/web/memory.max 33554432",
		"write st/web/memory.swap.max 0",
		"write st/web/cpu.max 20000 100000",
		"write st/web/pids.max 20",
	}
	if got := k.Ops(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ops:\n%s", strings.Join(got, "\n"))
	}
	if cg.Path() != filepath.Join(k.root, "st/web") {
		t.Errorf("Path %q", cg.Path())
	}
	if _, err := r.Create("web", Resources{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Create of web: %v, want ErrExist", err)
	}
	k.Ops()
	// Without swap accounting the swap limit is skipped, not an error.
	k.noSwap = true
	cg2, err := r.Create("noswap", Resources{MemoryMax: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if got := k.Ops(); !reflect.DeepEqual(got, []string{"mkdir st/noswap", "write st/noswap/memory.max 1048576"}) {
		t.Errorf("ops %v", got)
	}
	fd, err := cg.OpenFD()
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Errorf("OpenFD gave no directory: %v", err)
	}
	unix.Close(fd)
	for _, c := range []*Cgroup{cg, cg2} {
		if err := c.Delete(); err != nil {
			t.Fatal(err)
		}
	}
}

// This host's unified hierarchy offers only hugetlb.
func TestCreateV2MissingController(t *testing.T) {
	k, self := layoutV2(t, "hugetlb", "/")
	r := k.open(t, self, Options{Path: "st"})
	defer r.Close()
	for _, tc := range []struct {
		res  Resources
		ctrl string
	}{{Resources{MemoryMax: 1}, "memory"}, {Resources{CPUMax: 1}, "cpu"}, {Resources{PidsMax: 1}, "pids"}} {
		_, err := r.Create("web", tc.res)
		var ce *ControllerError
		if !errors.As(err, &ce) || ce.Controller != tc.ctrl {
			t.Fatalf("Create(%+v): %v", tc.res, err)
		}
		want := "cgroups: " + tc.ctrl + " controller not available: " + filepath.Join(k.root, "st/web/cgroup.controllers") + ` lists ""`
		if err.Error() != want {
			t.Errorf("error\n%q, want\n%q", err, want)
		}
		if k.exists("st/web") {
			t.Fatal("failed Create left its directory")
		}
	}
	cg, err := r.Create("web", Resources{})
	if err != nil {
		t.Fatalf("placement-only cgroup: %v", err)
	}
	cg.Delete()
}

func TestCreateV1LimitsPerControllerPaths(t *testing.T) {
	k, self := layoutV1(t, allV1, nil, hostV1Self)
	own := filepath.Join(k.root, "memory/process_api/abc")
	if err := os.MkdirAll(own, 0o755); err != nil {
		t.Fatal(err)
	}
	k.populate(filepath.Join(k.root, "memory/process_api"))
	k.populate(own)
	r := k.open(t, self, Options{})
	wantOpen := []string{
		"mkdir memory/process_api/abc/supervise",
		"mkdir cpu/supervise",
		"mkdir cpuacct/supervise",
		"mkdir freezer/supervise",
		"mkdir pids/supervise",
	}
	if got := k.Ops(); !reflect.DeepEqual(got, wantOpen) {
		t.Fatalf("Open ops:\n%s", strings.Join(got, "\n"))
	}
	cg, err := r.Create("web", Resources{MemoryMax: 32 << 20, CPUMax: 1.5, PidsMax: 20})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"mkdir memory/process_api/abc/supervise/web",
		"mkdir cpu/supervise/web",
		"mkdir cpuacct/supervise/web",
		"mkdir freezer/supervise/web",
		"mkdir pids/supervise/web",
		"write memory/process_api/abc/supervise/web/memory.limit_in_bytes 33554432",
		"write memory/process_api/abc/supervise/web/memory.memsw.limit_in_bytes 33554432",
		"write cpu/supervise/web/cpu.cfs_period_us 100000",
		"write cpu/supervise/web/cpu.cfs_quota_us 150000",
		"write pids/supervise/web/pids.max 20",
	}
	if got := k.Ops(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Create ops:\n%s", strings.Join(got, "\n"))
	}
	if cg.Path() != filepath.Join(own, "supervise/web") {
		t.Errorf("Path %q", cg.Path())
	}
	if _, err := cg.OpenFD(); err == nil || !strings.Contains(err.Error(), "needs cgroup v2") {
		t.Errorf("OpenFD on v1: %v", err)
	}

	// AddProc writes every hierarchy; Procs is the union.
	if err := cg.AddProc(31337); err != nil {
		t.Fatal(err)
	}
	if got := len(k.Ops()); got != 5 {
		t.Errorf("AddProc made %d writes, want 5", got)
	}
	k.put(cg.dir("pids"), "cgroup.procs", "31337\n12\n")
	if pids, err := cg.Procs(); err != nil || !reflect.DeepEqual(pids, []int{12, 31337}) {
		t.Errorf("Procs = %v, %v", pids, err)
	}
	for _, d := range cg.Dirs() {
		k.put(d, "cgroup.procs", "")
	}

	if err := cg.Delete(); err != nil {
		t.Fatal(err)
	}
	for _, d := range cg.Dirs() {
		if exists(d) {
			t.Errorf("%s left after Delete", d)
		}
	}
	if err := cg.Delete(); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	k.Ops()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !exists(own) {
		t.Error("Close removed the own cgroup it did not create")
	}
	if got := k.Ops(); len(got) != 5 {
		t.Errorf("Close ops %v", got)
	}
}

// On v1 a cgroup is in the hierarchies it uses: memory, cpu, cpuacct and
// freezer always (a status's figures, OOM kills, its CPU share, Kill), pids,
// a hierarchy of its own here, only for its limit. Existing finds what
// exists of one.
func TestCreateV1OnlyTheHierarchiesItUses(t *testing.T) {
	k, self := layoutV1(t, allV1, nil, hostV1Self)
	r := k.open(t, self, Options{Path: "t"})
	defer r.Close()
	k.Ops()
	plain, err := r.Create("plain", Resources{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mkdir memory/t/plain", "mkdir cpu/t/plain", "mkdir cpuacct/t/plain", "mkdir freezer/t/plain"}
	if got := k.Ops(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Create without limits:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := plain.AddProc(31337); err != nil {
		t.Fatal(err)
	}
	want = []string{"write memory/t/plain/cgroup.procs 31337", "write cpu/t/plain/cgroup.procs 31337",
		"write cpuacct/t/plain/cgroup.procs 31337", "write freezer/t/plain/cgroup.procs 31337"}
	if got := k.Ops(); !reflect.DeepEqual(got, want) {
		t.Fatalf("AddProc:\n%s", strings.Join(got, "\n"))
	}
	if plain.dir("pids") != "" || plain.dir("freezer") == "" {
		t.Errorf("dirs %v", plain.Dirs())
	}
	if plain.strategy() != killFreeze {
		t.Errorf("kill strategy %v, want freeze", plain.strategy())
	}
	lim, err := r.Create("limited", Resources{PidsMax: 50})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(lim.Dirs()); got != 5 || lim.dir("pids") == "" {
		t.Errorf("a pids-limited cgroup is in %v", lim.Dirs())
	}
	// What a predecessor made is found as it is: an adopted cgroup's
	// AddProc writes where it exists, not where it does not.
	again, err := r.Existing("plain")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Dirs(), plain.Dirs()) {
		t.Errorf("Existing found %v, Create made %v", again.Dirs(), plain.Dirs())
	}
	k.Ops()
	if err := again.AddProc(42); err != nil {
		t.Fatalf("AddProc to an existing cgroup: %v", err)
	}
	for _, c := range []*Cgroup{plain, lim} {
		for _, d := range c.Dirs() {
			k.put(d, "cgroup.procs", "")
		}
		if err := c.Delete(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Existing("plain"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Existing of a deleted cgroup: %v", err)
	}

	// pids co-mounted with another controller we use: every cgroup is in
	// that hierarchy.
	k2, self2 := layoutV1(t, []string{"memory", "cpu,cpuacct", "freezer,pids"}, map[string]string{"cpu": "cpu,cpuacct", "cpuacct": "cpu,cpuacct"}, "0::/\n")
	r2 := k2.open(t, self2, Options{Path: "t"})
	defer r2.Close()
	k2.Ops()
	c2, err := r2.Create("plain", Resources{})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"mkdir memory/t/plain", "mkdir cpu,cpuacct/t/plain", "mkdir freezer,pids/t/plain"}
	if got := k2.Ops(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Create with freezer,pids co-mounted:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	c2.Delete()

	// Only pids mounted: the cgroup is in it all the same, so that it
	// has a hierarchy to be tracked and killed in.
	k3, self3 := layoutV1(t, []string{"pids"}, nil, "0::/\n")
	r3 := k3.open(t, self3, Options{Path: "t"})
	defer r3.Close()
	c3, err := r3.Create("plain", Resources{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c3.Dirs()); got != 1 {
		t.Errorf("with only pids mounted, a cgroup is in %v, want it", c3.Dirs())
	}
	c3.Delete()
}

func TestV1CoMounted(t *testing.T) {
	k, self := layoutV1(t, []string{"cpu,cpuacct", "memory", "pids"},
		map[string]string{"cpu": "cpu,cpuacct", "cpuacct": "cpu,cpuacct"}, "0::/\n")
	r := k.open(t, self, Options{Path: "t"})
	defer r.Close()
	if got := len(r.Dirs()); got != 3 {
		t.Fatalf("%d hierarchies %v, want 3", got, r.Dirs())
	}
	k.Ops()
	cg, err := r.Create("x", Resources{CPUMax: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	ops := k.Ops()
	if !slices.Contains(ops, "write cpu,cpuacct/t/x/cpu.cfs_quota_us 50000") {
		t.Errorf("ops %v", ops)
	}
	k.put(cg.dir("cpuacct"), "cpuacct.usage", "1500000000\n")
	if s, err := cg.Stats(); err != nil || s.CPUUsage != 1500*time.Millisecond {
		t.Errorf("Stats = %+v, %v", s, err)
	}
	cg.Delete()
}

func TestV1MissingController(t *testing.T) {
	k, self := layoutV1(t, []string{"memory", "cpu"}, nil, "0::/\n")
	r := k.open(t, self, Options{Path: "t"})
	defer r.Close()
	k.Ops()
	_, err := r.Create("web", Resources{PidsMax: 10})
	want := "cgroups: pids controller not available: no v1 pids hierarchy under " + k.root
	if err == nil || err.Error() != want || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want %s", err, want)
	}
	if ops := k.Ops(); len(ops) != 0 {
		t.Errorf("a refused Create changed %v", ops)
	}
	// Without freezer and pids the rest still works, stats read 0.
	cg, err := r.Create("web", Resources{MemoryMax: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := cg.Stats(); err != nil || s != (Stats{}) {
		t.Errorf("Stats = %+v, %v", s, err)
	}
	if cg.strategy() != killSignals {
		t.Errorf("without freezer the kill strategy is %v", cg.strategy())
	}
	cg.Delete()
}

func TestCreateValidation(t *testing.T) {
	k, self := layoutV2(t, "cpu memory pids", "/")
	r := k.open(t, self, Options{Path: "st"})
	defer r.Close()
	k.Ops()
	for _, name := range []string{"", ".", "..", "a/b", "a\x00"} {
		if _, err := r.Create(name, Resources{}); err == nil || !strings.Contains(err.Error(), "invalid cgroup name") {
			t.Errorf("Create(%q): %v", name, err)
		}
	}
	for _, res := range []Resources{{MemoryMax: -1}, {CPUMax: -0.5}, {PidsMax: -3}} {
		if _, err := r.Create("x", res); err == nil {
			t.Errorf("Create(%+v) accepted", res)
		}
	}
	if ops := k.Ops(); len(ops) != 0 {
		t.Errorf("refused Creates changed %v", ops)
	}
	if (Resources{}).Any() || !(Resources{PidsMax: 1}).Any() || !(Resources{CPUMax: 0.1}).Any() || !(Resources{MemoryMax: 1}).Any() {
		t.Error("Resources.Any")
	}
}

func TestCPUQuota(t *testing.T) {
	for _, tc := range []struct {
		cores float64
		want  int64
	}{{0.2, 20000}, {1, 100000}, {1.5, 150000}, {0.001, 1000}, {0.00001, 1000}, {0.12345, 12345}, {4, 400000}} {
		if got := cpuQuota(tc.cores); got != tc.want {
			t.Errorf("cpuQuota(%v) = %d, want %d", tc.cores, got, tc.want)
		}
	}
}

func TestStatsV2(t *testing.T) {
	k, self := layoutV2(t, "cpu memory pids", "/")
	r := k.open(t, self, Options{Path: "st"})
	defer r.Close()
	cg, err := r.Create("web", Resources{})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Delete()
	d := cg.Path()
	k.put(d, "memory.current", "1048576\n")
	k.put(d, "memory.peak", "3145728\n")
	k.put(d, "cpu.stat", "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 3\n")
	k.put(d, "pids.current", "7\n")
	k.put(d, "memory.events", "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n")
	got, err := cg.Stats()
	want := Stats{MemoryBytes: 1 << 20, MemoryPeak: 3 << 20, CPUUsage: 2500 * time.Millisecond, Pids: 7, OOMKills: 2}
	if err != nil || got != want {
		t.Errorf("Stats = %+v, %v; want %+v", got, err, want)
	}
	k.put(d, "pids.current", "seven\n")
	if _, err := cg.Stats(); err == nil || !strings.Contains(err.Error(), "pids.current") {
		t.Errorf("garbage in pids.current: %v", err)
	}
}

func TestOOMKillsV1(t *testing.T) {
	k, self := layoutV1(t, allV1, nil, hostV1Self)
	r := k.open(t, self, Options{Path: "t"})
	defer r.Close()
	cg, err := r.Create("web", Resources{MemoryMax: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Delete()
	d := cg.dir("memory")
	for _, tc := range []struct {
		name                 string
		oomControl           string
		failcnt, peak, limit string
		want                 uint64
	}{
		{"oom_kill line", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", "9", "33554432", "33554432", 3},
		{"oom_kill 0 wins over failcnt", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", "9", "33554432", "33554432", 0},
		{"old kernel, under oom", "oom_kill_disable 0\nunder_oom 1\n", "0", "0", "33554432", 1},
		{"old kernel, hit the limit", "oom_kill_disable 0\nunder_oom 0\n", "4", "33554432", "33554432", 1},
		{"old kernel, below the limit", "oom_kill_disable 0\nunder_oom 0\n", "0", "1048576", "33554432", 0},
	} {
		k.put(d, "memory.oom_control", tc.oomControl)
		k.put(d, "memory.failcnt", tc.failcnt)
		k.put(d, "memory.max_usage_in_bytes", tc.peak)
		k.put(d, "memory.limit_in_bytes", tc.limit)
		if got, err := cg.OOMKills(); err != nil || got != tc.want {
			t.Errorf("%s: OOMKills = %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
	k.put(d, "memory.usage_in_bytes", "4096\n")
	// No pids limit: the cgroup is not in the pids hierarchy, and its
	// tasks are the lines of its tasks file.
	if cg.dir("pids") != "" {
		t.Fatalf("a cgroup without a pids limit is in the pids hierarchy: %v", cg.Dirs())
	}
	k.put(d, "tasks", "101\n102\n")
	k.put(cg.dir("cpuacct"), "cpuacct.usage", "42\n")
	k.put(d, "memory.oom_control", "oom_kill 1\n")
	want := Stats{MemoryBytes: 4096, MemoryPeak: 1048576, CPUUsage: 42, Pids: 2, OOMKills: 1} // the peak: max_usage_in_bytes
	if got, err := cg.Stats(); err != nil || got != want {
		t.Errorf("Stats = %+v, %v; want %+v", got, err, want)
	}
	// With one, pids.current.
	lim, err := r.Create("limited", Resources{PidsMax: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Delete()
	k.put(lim.dir("pids"), "pids.current", "7\n")
	if got, err := lim.Stats(); err != nil || got.Pids != 7 {
		t.Errorf("Stats of a pids-limited cgroup = %+v, %v; want Pids 7", got, err)
	}
}

func TestKillStrategiesFake(t *testing.T) {
	t.Run("v2 cgroup.kill", func(t *testing.T) {
		k, self := layoutV2(t, "cpu memory pids", "/")
		r := k.open(t, self, Options{Path: "st"})
		defer r.Close()
		cg, _ := r.Create("web", Resources{})
		k.put(cg.Path(), "cgroup.procs", "2147483\n")
		k.Ops()
		if err := cg.Kill(); err != nil {
			t.Fatal(err)
		}
		if got := k.Ops(); !reflect.DeepEqual(got, []string{"write st/web/cgroup.kill 1"}) {
			t.Errorf("ops %v", got)
		}
		cg.Delete()
	})
	t.Run("empty", func(t *testing.T) {
		k, self := layoutV1(t, allV1, nil, hostV1Self)
		r := k.open(t, self, Options{Path: "t"})
		defer r.Close()
		cg, _ := r.Create("web", Resources{})
		k.Ops()
		if err := cg.Kill(); err != nil {
			t.Fatal(err)
		}
		if got := k.Ops(); len(got) != 0 {
			t.Errorf("Kill of an empty group changed %v", got)
		}
		cg.Delete()
	})
	t.Run("v2 freeze", func(t *testing.T) {
		k, self := layoutV2(t, "cpu memory pids", "/")
		k.noKill = true
		r := k.open(t, self, Options{KillTimeout: 200 * time.Millisecond, Path: "st"})
		defer r.Close()
		cg, _ := r.Create("web", Resources{})
		// pid 1 is listed but never a member, so it is never signalled
		// and the group never empties: Kill reports it after freezing
		// and thawing.
		k.put(cg.Path(), "cgroup.procs", "1\n")
		k.Ops()
		if err := cg.Kill(); err == nil || !strings.Contains(err.Error(), "processes left") {
			t.Fatalf("Kill: %v", err)
		}
		if got := k.Ops(); !reflect.DeepEqual(got, []string{"write st/web/cgroup.freeze 1", "write st/web/cgroup.freeze 0"}) {
			t.Errorf("ops %v", got)
		}
		k.put(cg.Path(), "cgroup.procs", "")
		if err := cg.Delete(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("v1 freezer", func(t *testing.T) {
		k, self := layoutV1(t, allV1, nil, hostV1Self)
		r := k.open(t, self, Options{KillTimeout: 200 * time.Millisecond, Path: "t"})
		defer r.Close()
		cg, _ := r.Create("web", Resources{})
		// pid 1 is listed but never a member, so it is never signalled
		// and the group never empties: Kill reports it after freezing
		// and thawing.
		k.put(cg.dir("freezer"), "cgroup.procs", "1\n")
		k.Ops()
		if err := cg.Kill(); err == nil || !strings.Contains(err.Error(), "processes left") {
			t.Fatalf("Kill: %v", err)
		}
		if got := k.Ops(); !reflect.DeepEqual(got, []string{"write freezer/t/web/freezer.state FROZEN", "write freezer/t/web/freezer.state THAWED"}) {
			t.Errorf("ops %v", got)
		}
		k.put(cg.dir("freezer"), "cgroup.procs", "")
		if err := cg.Delete(); err != nil {
			t.Fatal(err)
		}
	})
	// A process that never leaves (here: a pid that is not ours, so it is
	// never signalled) makes Kill and Delete fail, within the bound.
	t.Run("bounded", func(t *testing.T) {
		k, self := layoutV1(t, []string{"memory", "pids"}, nil, "0::/\n")
		r := k.open(t, self, Options{Path: "t", KillTimeout: 300 * time.Millisecond})
		defer r.Close()
		cg, _ := r.Create("web", Resources{})
		k.put(cg.Path(), "cgroup.procs", "1\n")
		start := time.Now()
		err := cg.Kill()
		if err == nil || !strings.Contains(err.Error(), "1 processes left after 300ms: [1]") {
			t.Errorf("Kill: %v", err)
		}
		if err := cg.Delete(); err == nil {
			t.Error("Delete of a group that does not empty succeeded")
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("bounded Kill+Delete took %v", d)
		}
		k.put(cg.Path(), "cgroup.procs", "")
		if err := cg.Delete(); err != nil {
			t.Fatal(err)
		}
	})
}

// Close removes only what Open created and reports a busy subtree.
func TestCloseOnlyCreated(t *testing.T) {
	k, self := layoutV1(t, []string{"memory"}, nil, "0::/\n")
	if err := os.MkdirAll(filepath.Join(k.root, "memory/a"), 0o755); err != nil {
		t.Fatal(err)
	}
	k.populate(filepath.Join(k.root, "memory/a"))
	r := k.open(t, self, Options{Path: "/a/b/c"})
	cg, err := r.Create("x", Resources{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); !errors.Is(err, unix.EBUSY) {
		t.Errorf("Close with a sandbox left: %v", err)
	}
	cg.Delete()
	k.Ops()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := k.Ops(); !reflect.DeepEqual(got, []string{"rmdir memory/a/b/c", "rmdir memory/a/b"}) {
		t.Errorf("Close ops %v", got)
	}
	if !k.exists("memory/a") {
		t.Error("Close removed memory/a, which it did not create")
	}
}

// sharedLayouts are a v1 host and a v2 systemd service, with the default
// subtree "<own>/supervise" each; subtree is its directory in the first
// hierarchy.
func sharedLayouts(t *testing.T) map[string]func() (k *fakeKernel, self, subtree string) {
	return map[string]func() (*fakeKernel, string, string){
		"v1": func() (*fakeKernel, string, string) {
			k, self := layoutV1(t, []string{"memory", "pids"}, nil, "8:pids:/\n4:memory:/\n")
			return k, self, "memory/supervise"
		},
		"v2": func() (*fakeKernel, string, string) {
			own := "/system.slice/supervise.service"
			k, self := layoutV2(t, "cpu memory pids", own)
			return k, self, own + "/supervise"
		},
	}
}

// Two supervisors share the default subtree: the first to leave finds the
// other's cgroup in it and leaves it, without an error; the last one
// removes it, whichever of them created it.
func TestSharedSubtreeGoesWithTheLastRoot(t *testing.T) {
	for name, layout := range sharedLayouts(t) {
		for _, creatorFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s creator first %v", name, creatorFirst), func(t *testing.T) {
				k, self, subtree := layout()
				a := k.open(t, self, Options{})
				b := k.open(t, self, Options{})
				ca, err := a.Create("a", Resources{})
				if err != nil {
					t.Fatal(err)
				}
				cb, err := b.Create("b", Resources{})
				if err != nil {
					t.Fatal(err)
				}
				first, last, cfirst, clast := a, b, ca, cb
				if !creatorFirst {
					first, last, cfirst, clast = b, a, cb, ca
				}
				if err := cfirst.Delete(); err != nil {
					t.Fatal(err)
				}
				if err := first.Close(); err != nil {
					t.Errorf("Close of the first to leave, the other's cgroup still there: %v", err)
				}
				if !k.exists(subtree) {
					t.Fatal("the first to leave removed the subtree the other uses")
				}
				if err := clast.Delete(); err != nil {
					t.Fatal(err)
				}
				if err := last.Close(); err != nil {
					t.Errorf("Close of the last to leave: %v", err)
				}
				if k.exists(subtree) {
					t.Errorf("%s left behind by the last supervisor to leave", subtree)
				}
			})
		}
	}
}

// The kernel frees an emptied cgroup asynchronously: a subtree busy with
// no cgroup in it is retried, and goes.
func TestCloseRetriesATransientBusy(t *testing.T) {
	k, self := layoutV1(t, []string{"memory"}, nil, "4:memory:/\n")
	r := k.open(t, self, Options{})
	k.busy("memory/supervise", 3)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if k.exists("memory/supervise") {
		t.Error("the subtree is still there")
	}
}

// A supervisor that leaves removes the shared subtree while another has
// no cgroup in it yet: the other's next Create makes it again.
func TestCreateRemakesASubtreeRemovedByAnother(t *testing.T) {
	for name, layout := range sharedLayouts(t) {
		t.Run(name, func(t *testing.T) {
			k, self, subtree := layout()
			a := k.open(t, self, Options{})
			b := k.open(t, self, Options{})
			if err := a.Close(); err != nil || k.exists(subtree) {
				t.Fatalf("Close: %v (subtree there: %v)", err, k.exists(subtree))
			}
			cg, err := b.Create("web", Resources{MemoryMax: 32 << 20, PidsMax: 20})
			if err != nil {
				t.Fatalf("Create after the subtree went: %v", err)
			}
			if err := cg.Delete(); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil || k.exists(subtree) {
				t.Fatalf("Close: %v (subtree there: %v)", err, k.exists(subtree))
			}
		})
	}
}

// Children of a subtree another supervisor removed: none, not an error.
func TestChildrenOfARemovedSubtree(t *testing.T) {
	k, self := layoutV1(t, []string{"memory"}, nil, "4:memory:/\n")
	a := k.open(t, self, Options{})
	b := k.open(t, self, Options{})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if names, err := b.Children(); err != nil || len(names) != 0 {
		t.Errorf("Children = %v, %v; want none", names, err)
	}
}
