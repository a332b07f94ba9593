//go:build linux

package proc

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// counts are the resources a cycle must give back.
type counts struct {
	goroutines, fds, children, cgroupDirs int
}

func snapshot(r *Runtime) counts {
	c := counts{goroutines: runtime.NumGoroutine(), fds: countFds(), children: len(ourChildren())}
	if r.cg != nil {
		for _, d := range []string{"", "memory", "pids", "cpu", "freezer", "unified"} {
			ents, _ := os.ReadDir(filepath.Join("/sys/fs/cgroup", d, testRoot()))
			for _, e := range ents {
				if e.IsDir() {
					c.cgroupDirs++
				}
			}
		}
	}
	return c
}

// settle waits (bounded) for goroutines that are finishing to finish.
func settle(t *testing.T, r *Runtime, want counts) counts {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := snapshot(r)
		if got.goroutines <= want.goroutines && got.fds <= want.fds && got.children <= want.children && got.cgroupDirs <= want.cgroupDirs {
			return got
		}
		if time.Now().After(deadline) {
			return got
		}
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCyclesLeakNothing(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	for _, tc := range []struct {
		sc SandboxConfig
		n  int
	}{
		{SandboxConfig{Name: "leak-cgroup", PidsMax: 64, MemoryMax: 64 << 20}, 1000},
		{SandboxConfig{Name: "leak-ns", Namespaces: []Namespace{NamespacePID, NamespaceMount, NamespaceUTS, NamespaceIPC, NamespaceNet}, PidsMax: 64}, 200},
	} {
		t.Run(tc.sc.Name, func(t *testing.T) {
			if r.cg == nil {
				tc.sc.PidsMax, tc.sc.MemoryMax = 0, 0
			}
			n := tc.n
			if testing.Short() {
				n /= 10
			}
			ctx := ctxT(t)
			// One cycle first, so lazily started runtime goroutines count
			// in the baseline.
			cycle := func() {
				sid, err := r.CreateSandbox(ctx, tc.sc)
				if err != nil {
					t.Fatal(err)
				}
				id, err := r.Create(ctx, sid, shell("exec sleep 1000"))
				if err != nil {
					t.Fatal(err)
				}
				if err := r.Start(ctx, id); err != nil {
					t.Fatal(err)
				}
				if err := r.Stop(ctx, id, 10*time.Second); err != nil {
					t.Fatal(err)
				}
				if err := r.Remove(ctx, id); err != nil {
					t.Fatal(err)
				}
				if err := r.DeleteSandbox(ctx, sid); err != nil {
					t.Fatal(err)
				}
				<-r.Events()
			}
			cycle()
			before := snapshot(r)
			start := time.Now()
			for range n {
				cycle()
			}
			took := time.Since(start)
			after := settle(t, r, before)
			t.Logf("%d cycles in %v (%v each); before %+v after %+v", n, took, took/time.Duration(n), before, after)
			if after.goroutines > before.goroutines || after.fds > before.fds || after.children > before.children || after.cgroupDirs > before.cgroupDirs {
				t.Errorf("leak after %d cycles: before %+v, after %+v", n, before, after)
			}
			if len(r.List(ListFilter{})) != 0 {
				t.Errorf("processes still listed: %v", r.List(ListFilter{}))
			}
		})
	}
}
