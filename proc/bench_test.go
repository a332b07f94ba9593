//go:build linux

package proc

import (
	"context"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"
)

// Spawn benchmarks: create and start /bin/true and see its exit. The
// baseline is plain os/exec in the same run (no Runtime open, so its Wait
// owns the exit); every other case reports its ratio to it.
//
//	go test -run '^$' -bench Spawn -benchtime 300x ./proc
var baseline struct {
	sync.Mutex
	nsPerOp float64
}

func BenchmarkSpawn(b *testing.B) {
	needRoot(b)
	b.Run("os-exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
		baseline.Lock()
		baseline.nsPerOp = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		baseline.Unlock()
	})
	all := []Namespace{NamespacePID, NamespaceMount, NamespaceUTS, NamespaceIPC, NamespaceNet, NamespaceUser}
	cases := []struct {
		name      string
		sc        SandboxConfig
		forceInit bool
	}{
		{"no-sandbox", SandboxConfig{Name: "b", NoCgroup: true}, false},
		{"cgroup", SandboxConfig{Name: "b", PidsMax: 1000, MemoryMax: 1 << 30}, false},
		{"cgroup-via-init", SandboxConfig{Name: "b", PidsMax: 1000, MemoryMax: 1 << 30}, true},
		{"all-ns", SandboxConfig{Name: "b", Namespaces: all, PidsMax: 1000, MemoryMax: 1 << 30}, false},
	}
	// Create+start in an existing sandbox: the CRI's CreateContainer +
	// StartContainer.
	for _, c := range cases {
		b.Run("process/"+c.name, func(b *testing.B) {
			r := benchRuntime(b, c.forceInit)
			ctx := context.Background()
			sid, err := r.CreateSandbox(ctx, c.sc)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				id, err := r.Create(ctx, sid, ProcessConfig{Args: []string{"/bin/true"}, Umask: -1})
				if err != nil {
					b.Fatal(err)
				}
				if err := r.Start(ctx, id); err != nil {
					b.Fatal(err)
				}
				if ev := <-r.Events(); ev.ExitCode != 0 {
					b.Fatalf("exit %+v", ev)
				}
				r.Remove(ctx, id)
			}
			report(b)
			r.DeleteSandbox(ctx, sid)
		})
	}
	// The whole sandbox each time: CreateSandbox, create, start, exit,
	// DeleteSandbox.
	for _, c := range cases {
		b.Run("sandbox/"+c.name, func(b *testing.B) {
			r := benchRuntime(b, c.forceInit)
			ctx := context.Background()
			for b.Loop() {
				sid, err := r.CreateSandbox(ctx, c.sc)
				if err != nil {
					b.Fatal(err)
				}
				id, err := r.Create(ctx, sid, ProcessConfig{Args: []string{"/bin/true"}, Umask: -1})
				if err != nil {
					b.Fatal(err)
				}
				if err := r.Start(ctx, id); err != nil {
					b.Fatal(err)
				}
				if ev := <-r.Events(); ev.ExitCode != 0 {
					b.Fatalf("exit %+v", ev)
				}
				if err := r.DeleteSandbox(ctx, sid); err != nil {
					b.Fatal(err)
				}
			}
			report(b)
		})
	}
}

func benchRuntime(b *testing.B, forceInit bool) *Runtime {
	r, err := New(Options{CgroupRoot: testRoot()})
	if err != nil {
		b.Fatal(err)
	}
	r.forceInit = forceInit
	b.Cleanup(func() { r.Close() })
	return r
}

func report(b *testing.B) {
	baseline.Lock()
	base := baseline.nsPerOp
	baseline.Unlock()
	per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(per/1e6, "ms/op")
	if base > 0 {
		b.ReportMetric(per/base, "x-os-exec")
	}
	_ = time.Millisecond
}

// BenchmarkSpawnRatios interleaves the cases round-robin, so that a load
// spike on a shared machine hits them all alike, and prints the median
// time per spawn of each with its ratio to os/exec. Run it once:
//
//	go test -run '^$' -bench SpawnRatios -benchtime 1x ./proc
func BenchmarkSpawnRatios(b *testing.B) {
	needRoot(b)
	const rounds, per = 20, 20
	all := []Namespace{NamespacePID, NamespaceMount, NamespaceUTS, NamespaceIPC, NamespaceNet, NamespaceUser}
	type kase struct {
		name      string
		sc        SandboxConfig
		forceInit bool
		whole     bool // CreateSandbox and DeleteSandbox inside the timing
		samples   []time.Duration
	}
	cases := []*kase{
		{name: "no sandbox", sc: SandboxConfig{Name: "b", NoCgroup: true}},
		{name: "cgroup only", sc: SandboxConfig{Name: "b", PidsMax: 1000, MemoryMax: 1 << 30}},
		{name: "cgroup only, placed by the init", sc: SandboxConfig{Name: "b", PidsMax: 1000, MemoryMax: 1 << 30}, forceInit: true},
		{name: "all namespaces + cgroup", sc: SandboxConfig{Name: "b", Namespaces: all, PidsMax: 1000, MemoryMax: 1 << 30}},
		{name: "whole sandbox: no sandbox", sc: SandboxConfig{Name: "b", NoCgroup: true}, whole: true},
		{name: "whole sandbox: cgroup only", sc: SandboxConfig{Name: "b", PidsMax: 1000, MemoryMax: 1 << 30}, whole: true},
		{name: "whole sandbox: all namespaces", sc: SandboxConfig{Name: "b", Namespaces: all, NoCgroup: true}, whole: true},
		{name: "whole sandbox: all ns + cgroup", sc: SandboxConfig{Name: "b", Namespaces: all, PidsMax: 1000, MemoryMax: 1 << 30}, whole: true},
	}
	var base []time.Duration
	ctx := context.Background()
	for range b.N {
		for range rounds {
			for range per {
				t0 := time.Now()
				if err := exec.Command("/bin/true").Run(); err != nil {
					b.Fatal(err)
				}
				base = append(base, time.Since(t0))
			}
			r, err := New(Options{CgroupRoot: testRoot()})
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range cases {
				r.forceInit = c.forceInit
				if c.whole {
					for range per / 4 {
						t0 := time.Now()
						sid, err := r.CreateSandbox(ctx, c.sc)
						if err != nil {
							b.Fatal(err)
						}
						id, err := r.Create(ctx, sid, ProcessConfig{Args: []string{"/bin/true"}, Umask: -1})
						if err == nil {
							err = r.Start(ctx, id)
						}
						if err != nil {
							b.Fatal(err)
						}
						<-r.Events()
						if err := r.DeleteSandbox(ctx, sid); err != nil {
							b.Fatal(err)
						}
						c.samples = append(c.samples, time.Since(t0))
					}
					continue
				}
				sid, err := r.CreateSandbox(ctx, c.sc)
				if err != nil {
					b.Fatal(err)
				}
				for range per {
					t0 := time.Now()
					id, err := r.Create(ctx, sid, ProcessConfig{Args: []string{"/bin/true"}, Umask: -1})
					if err == nil {
						err = r.Start(ctx, id)
					}
					if err != nil {
						b.Fatal(err)
					}
					<-r.Events()
					c.samples = append(c.samples, time.Since(t0))
					r.Remove(ctx, id)
				}
				r.DeleteSandbox(ctx, sid)
			}
			r.Close()
		}
	}
	mb := median(base)
	b.Logf("create+start /bin/true and see its exit, median of %d (%d rounds interleaved):", len(base), rounds)
	b.Logf("  %-34s %8.3f ms  1.00x", "os/exec (baseline)", ms(mb))
	for _, c := range cases {
		m := median(c.samples)
		b.Logf("  %-34s %8.3f ms  %.2fx  (n=%d)", c.name, ms(m), float64(m)/float64(mb), len(c.samples))
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
