//go:build linux

package proc

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCgroupV2Placement runs on the cgroup2 hierarchy: on a hybrid host
// (this CI machine) that is the controller-less /sys/fs/cgroup/unified,
// where children can be placed (clone3 CLONE_INTO_CGROUP) and killed
// (cgroup.kill) but not limited. Limits on v2 need a host (or the VM
// test) with v2 controllers: TestV2Limits below.
func TestCgroupV2Placement(t *testing.T) {
	needRoot(t)
	if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.controllers"); err != nil {
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
			t.Skip("no cgroup2 hierarchy mounted")
		}
	}
	r := newRuntime(t, Options{CgroupMode: "v2"})
	needCgroups(t, r)
	for _, sc := range []SandboxConfig{
		{Name: "v2-direct"},
		{Name: "v2-init", Namespaces: []Namespace{NamespacePID, NamespaceMount}},
	} {
		t.Run(sc.Name, func(t *testing.T) {
			ctx := ctxT(t)
			sid, err := r.CreateSandbox(ctx, sc)
			if err != nil {
				t.Fatal(err)
			}
			ss, _ := r.SandboxStatus(sid)
			out, ch := lines(t)
			cfg := shell(`grep '^0::' /proc/self/cgroup; for i in 1 2 3; do setsid sleep 987654 & done; echo done; exec sleep 1000`)
			cfg.Stdout = out
			mustStart(t, r, sid, cfg)
			line := next(t, ch)
			if !strings.HasSuffix(line, "/"+sid) {
				t.Errorf("program's v2 cgroup: %q, want .../%s", line, sid)
			}
			next(t, ch)
			if got := placement(r.sandboxes[sid].place.Load()); got != placeFD {
				t.Errorf("placement %d, want clone3 into the cgroup", got)
			}
			daemons := waitSleepers(3)
			if len(daemons) != 3 {
				t.Errorf("%d daemons, want 3", len(daemons))
			}
			if err := r.DeleteSandbox(ctx, sid); err != nil {
				t.Fatal(err)
			}
			for _, pid := range daemons {
				if alive(pid) {
					t.Errorf("daemon %d survived", pid)
				}
			}
			if _, err := os.Stat(ss.CgroupPath); !os.IsNotExist(err) {
				t.Errorf("cgroup %s left: %v", ss.CgroupPath, err)
			}
		})
	}
}

// TestV2Limits needs cgroup v2 with the memory, pids and cpu controllers
// (a pure v2 host, or the VM of scripts/v2vm.sh).
func TestV2Limits(t *testing.T) {
	needRoot(t)
	b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	if err != nil || !strings.Contains(string(b), "memory") || !strings.Contains(string(b), "pids") {
		t.Skip("no cgroup v2 with memory and pids controllers on this host (the CI VM step covers it)")
	}
	r := newRuntime(t, Options{})
	if !r.cg.v2() {
		t.Fatal("v2 host not detected as v2")
	}
	for _, ns := range [][]Namespace{nil, {NamespacePID, NamespaceMount}} {
		t.Run(fmt.Sprint(ns), func(t *testing.T) {
			sid, ev := run(t, r, SandboxConfig{Name: "v2oom", Namespaces: ns, MemoryMax: 32 << 20}, helper("hog", "200"))
			if ev.Reason != ReasonOOMKilled {
				t.Errorf("200 MiB in 32 MiB: %s (code %d signal %v)", ev.Reason, ev.ExitCode, ev.Signal)
			}
			if got := placement(r.sandboxes[sid].place.Load()); got != placeFD {
				t.Errorf("placement %d, want clone3 into the cgroup", got)
			}
			r.DeleteSandbox(ctxT(t), sid)
		})
	}
}

// waitSleepers waits (bounded) until n `sleep 987654` processes exist.
func waitSleepers(n int) []int {
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := findSleepers()
		if len(s) >= n || time.Now().After(deadline) {
			return s
		}
		time.Sleep(5 * time.Millisecond)
	}
}
