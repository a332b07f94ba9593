//go:build linux

package proc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var allNamespaces = []Namespace{NamespacePID, NamespaceMount, NamespaceUTS, NamespaceIPC, NamespaceNet, NamespaceUser}

func TestOOMKilled(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	needCgroups(t, r)
	for _, ns := range [][]Namespace{nil, {NamespacePID, NamespaceMount}} {
		t.Run(fmt.Sprint(ns), func(t *testing.T) {
			sc := SandboxConfig{Name: "oom", Namespaces: ns, MemoryMax: 32 << 20}
			sid, ev := run(t, r, sc, helper("hog", "200"))
			if ev.Reason != ReasonOOMKilled || ev.Signal != syscall.SIGKILL {
				t.Errorf("200 MiB in 32 MiB: got %s (code %d, signal %v), want OOMKilled", ev.Reason, ev.ExitCode, ev.Signal)
			}
			r.DeleteSandbox(ctxT(t), sid)
			// The same limit lets a modest program finish (dd touches its
			// 8 MiB buffer; a Go helper built with -race would not fit).
			sid, ev = run(t, r, sc, ProcessConfig{Args: []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=8M", "count=4"}, Umask: -1})
			if ev.Reason != ReasonCompleted {
				t.Errorf("8 MiB in 32 MiB: got %s (code %d, signal %v), want Completed", ev.Reason, ev.ExitCode, ev.Signal)
			}
			r.DeleteSandbox(ctxT(t), sid)
		})
	}
}

// A sandbox's first start takes its fresh cgroup's OOM-kill count as 0
// without reading it; a later start reads it, so that a SIGKILL after an
// earlier run's OOM kill is not taken for another one, and an Exec that
// ran first counts as a run.
func TestOOMKilledOnlyOnceInASandbox(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	needCgroups(t, r)
	ctx := ctxT(t)
	for _, execFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("exec first %v", execFirst), func(t *testing.T) {
			sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "oomonce", MemoryMax: 32 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer r.DeleteSandbox(ctx, sid)
			if execFirst {
				res, err := r.Exec(ctx, sid, ExecConfig{Args: []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=200M", "count=1"}})
				if err != nil || res.Signal != syscall.SIGKILL {
					t.Fatalf("a 200 MiB exec in 32 MiB: %+v %v", res, err)
				}
			} else {
				id := mustStart(t, r, sid, helper("hog", "200"))
				if ev := waitExit(t, r, id); ev.Reason != ReasonOOMKilled {
					t.Fatalf("200 MiB in 32 MiB: %s (signal %v), want OOMKilled", ev.Reason, ev.Signal)
				}
			}
			id := mustStart(t, r, sid, ProcessConfig{Args: []string{"sleep", "60"}, Umask: -1})
			if err := r.Signal(id, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if ev := waitExit(t, r, id); ev.Reason == ReasonOOMKilled || ev.Signal != syscall.SIGKILL {
				t.Errorf("a SIGKILL after an OOM kill in the same sandbox: %s (signal %v), want Killed", ev.Reason, ev.Signal)
			}
		})
	}
}

func TestPidsMax(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	needCgroups(t, r)
	for _, ns := range [][]Namespace{nil, {NamespacePID}} {
		t.Run(fmt.Sprint(ns), func(t *testing.T) {
			ctx := ctxT(t)
			sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "pids", Namespaces: ns, PidsMax: 20})
			if err != nil {
				t.Fatal(err)
			}
			out, ch := lines(t)
			cfg := helper("forkloop")
			cfg.Stdout = out
			mustStart(t, r, sid, cfg)
			line := next(t, ch)
			var n int
			var rest string
			if _, err := fmt.Sscanf(line, "stopped %d", &n); err != nil {
				t.Fatalf("fork loop: %q", line)
			}
			rest = line
			if n >= 20 || !strings.Contains(rest, "resource temporarily unavailable") {
				t.Errorf("fork loop: %q, want stopped below 20 with EAGAIN", line)
			}
			st, err := r.Stats(sid)
			if err != nil || st.Pids > 20 || st.Pids < int64(n) {
				t.Errorf("stats %+v %v: want %d <= pids <= 20", st, err, n)
			}
			t.Logf("fork loop stopped after %d forks; pids.current %d", n, st.Pids)
			if err := r.DeleteSandbox(ctx, sid); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestCPUMax(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	needCgroups(t, r)
	ctx := ctxT(t)
	sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "cpu", CPUMax: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	before, err := r.Stats(sid)
	if err != nil {
		t.Fatal(err)
	}
	id := mustStart(t, r, sid, helper("busy", "2"))
	ev := waitExit(t, r, id)
	after, err := r.Stats(sid)
	if err != nil {
		t.Fatal(err)
	}
	wall := ev.FinishedAt.Sub(ev.StartedAt)
	used := after.CPUUsage - before.CPUUsage
	share := used.Seconds() / wall.Seconds()
	t.Logf("busy loop under cpu_max 0.2: %v CPU in %v wall = %.3f of a core", used, wall, share)
	// Wide tolerance: the machine is shared; the limit is what must hold.
	if ev.ExitCode != 0 || share > 0.35 || share < 0.02 {
		t.Errorf("got %.3f of a core (exit %d), want about 0.2", share, ev.ExitCode)
	}
	r.DeleteSandbox(ctx, sid)
}

func runOutput(t *testing.T, r *Runtime, sc SandboxConfig, cfg ProcessConfig) (ExitEvent, string) {
	t.Helper()
	var buf bytes.Buffer
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { buf.ReadFrom(pr); close(done) }()
	cfg.Stdout, cfg.Stderr = pw, pw
	sid, ev := run(t, r, sc, cfg)
	pw.Close()
	if err := r.DeleteSandbox(ctxT(t), sid); err != nil {
		t.Error(err)
	}
	<-done
	pr.Close()
	return ev, buf.String()
}

func TestPidMountNamespaces(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	ev, out := runOutput(t, r, SandboxConfig{Name: "pidns", Namespaces: []Namespace{NamespacePID, NamespaceMount}},
		shell(`echo $PPID; ls /proc | grep '^[0-9]*$' | tr '\n' ' '; echo; readlink /proc/self`))
	f := strings.Split(out, "\n")
	if ev.ExitCode != 0 || len(f) < 3 {
		t.Fatalf("exit %d, output %q", ev.ExitCode, out)
	}
	if f[0] != "1" {
		t.Errorf("parent inside: %s, want 1", f[0])
	}
	pids := strings.Fields(f[1])
	if len(pids) > 6 || !slices.Contains(pids, "1") {
		t.Errorf("/proc inside lists %v: want only the sandbox's few processes", pids)
	}
	for _, p := range pids {
		if n, _ := strconv.Atoi(p); n > 50 {
			t.Errorf("/proc inside has pid %d: a host pid", n)
		}
	}
	if n, _ := strconv.Atoi(f[2]); n == 0 || n > 50 {
		t.Errorf("/proc/self inside is %q", f[2])
	}
	// The host's /proc is untouched.
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", os.Getpid())); err != nil {
		t.Errorf("host /proc: %v", err)
	}
}

func TestUTSNamespace(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	host, _ := os.Hostname()
	ev, out := runOutput(t, r, SandboxConfig{Name: "uts", Namespaces: []Namespace{NamespaceUTS}, Hostname: "sbx-uts"},
		shell(`cat /proc/sys/kernel/hostname`))
	if ev.ExitCode != 0 || out != "sbx-uts\n" {
		t.Errorf("hostname inside: %q (exit %d), want sbx-uts", out, ev.ExitCode)
	}
	if h, _ := os.Hostname(); h != host {
		t.Errorf("host hostname changed to %q", h)
	}
}

func TestNetNamespace(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	ev, out := runOutput(t, r, SandboxConfig{Name: "net", Namespaces: []Namespace{NamespaceNet}}, helper("ifaces"))
	if ev.ExitCode != 0 || out != "lo up=true\n" {
		t.Errorf("interfaces inside: %q (exit %d), want only lo, up", out, ev.ExitCode)
	}
}

func TestUserNamespace(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	for _, ns := range [][]Namespace{{NamespaceUser}, allNamespaces} {
		t.Run(fmt.Sprint(ns), func(t *testing.T) {
			ctx := ctxT(t)
			sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "user", Namespaces: ns})
			if err != nil {
				t.Fatal(err)
			}
			out, ch := lines(t)
			cfg := shell(`id -u; cat /proc/self/uid_map; echo ready; exec sleep 1000`)
			cfg.Stdout = out
			id := mustStart(t, r, sid, cfg)
			if got := next(t, ch); got != "0" {
				t.Errorf("uid inside: %s, want 0", got)
			}
			if got := strings.Fields(next(t, ch)); !slices.Equal(got, []string{"0", "100000", "65536"}) {
				t.Errorf("uid_map: %v", got)
			}
			next(t, ch)
			st, _ := r.Status(id)
			status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", st.Pid))
			if st.Pid == 0 || err != nil {
				t.Fatalf("host pid %d: %v", st.Pid, err)
			}
			for l := range strings.Lines(string(status)) {
				if strings.HasPrefix(l, "Uid:") && strings.Fields(l)[1] != "100000" {
					t.Errorf("outside: %q, want uid 100000", strings.TrimSpace(l))
				}
			}
			if err := r.DeleteSandbox(ctx, sid); err != nil {
				t.Error(err)
			}
		})
	}
}

// findSleepers lists host pids running `sleep 987654` (the daemons helper).
func findSleepers() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if string(b) == "sleep\x00987654\x00" && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func TestDeleteSandboxKillsDaemons(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	for _, sc := range []SandboxConfig{
		{Name: "cgroup"},
		{Name: "cgroup+pidns", Namespaces: []Namespace{NamespacePID, NamespaceMount}},
		{Name: "cgroup+uts", Namespaces: []Namespace{NamespaceUTS}},
		{Name: "pidns-only", Namespaces: []Namespace{NamespacePID}, NoCgroup: true},
	} {
		t.Run(sc.Name, func(t *testing.T) {
			if r.cg == nil && !sc.NoCgroup {
				t.Skipf("no cgroups: %v", r.cgErr)
			}
			ctx := ctxT(t)
			sid, err := r.CreateSandbox(ctx, sc)
			if err != nil {
				t.Fatal(err)
			}
			out, ch := lines(t)
			cfg := helper("daemons", "5")
			cfg.Stdout = out
			mustStart(t, r, sid, cfg)
			for range 5 {
				next(t, ch)
			}
			if l := next(t, ch); l != "done" {
				t.Fatalf("daemons: %s", l)
			}
			// Bounded wait: a pid is printed once its exec began, but
			// /proc/<pid>/cmdline is filled in a little later.
			daemons := waitSleepers(5)
			if len(daemons) != 5 {
				t.Fatalf("found %d daemons, want 5", len(daemons))
			}
			ss, _ := r.SandboxStatus(sid)
			if err := r.DeleteSandbox(ctx, sid); err != nil {
				t.Fatal(err)
			}
			for _, pid := range daemons {
				if alive(pid) {
					t.Errorf("daemon %d survived DeleteSandbox", pid)
				}
			}
			if ss.CgroupPath != "" {
				if _, err := os.Stat(ss.CgroupPath); !os.IsNotExist(err) {
					t.Errorf("cgroup %s still there: %v", ss.CgroupPath, err)
				}
			}
			if _, err := r.SandboxStatus(sid); err == nil {
				t.Error("sandbox still listed")
			}
		})
	}
}

func TestStopIgnoringTERM(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	for _, sc := range []SandboxConfig{
		{Name: "plain", NoCgroup: true},
		{Name: "cgroup"},
		{Name: "pidns", Namespaces: []Namespace{NamespacePID, NamespaceMount}},
	} {
		t.Run(sc.Name, func(t *testing.T) {
			ctx := ctxT(t)
			sid, err := r.CreateSandbox(ctx, sc)
			if err != nil {
				t.Fatal(err)
			}
			out, ch := lines(t)
			cfg := helper("ignore-term")
			cfg.Stdout = out
			id := mustStart(t, r, sid, cfg)
			if l := next(t, ch); l != "ready" {
				t.Fatal(l)
			}
			const grace = time.Second
			start := time.Now()
			if err := r.Stop(ctx, id, grace); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			st, _ := r.Status(id)
			if st.State != StateExited || st.Signal != syscall.SIGKILL || st.Reason != ReasonSignaled {
				t.Errorf("after Stop: %+v", st)
			}
			if took < grace || took > grace+20*time.Second {
				t.Errorf("Stop took %v with a grace of %v", took, grace)
			}
			t.Logf("Stop with grace %v took %v", grace, took)
			r.DeleteSandbox(ctx, sid)
		})
	}
}

func TestExecInsideSandbox(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	needCgroups(t, r)
	ctx := ctxT(t)
	sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "exec", Hostname: "exec-host", PidsMax: 64,
		Namespaces: []Namespace{NamespacePID, NamespaceMount, NamespaceUTS, NamespaceIPC}})
	if err != nil {
		t.Fatal(err)
	}
	// sleep itself, not a shell that execs it: Start returns once the
	// program is exec'd, so the Exec below finds it named sleep.
	mustStart(t, r, sid, ProcessConfig{Args: []string{"/bin/sleep", "1000"}, Env: []string{"PATH=" + defaultPath}, Umask: -1})
	ss, _ := r.SandboxStatus(sid)
	var out bytes.Buffer
	res, err := r.Exec(ctx, sid, ExecConfig{
		Args:   []string{"sh", "-c", `cat /proc/sys/kernel/hostname; echo $$; cat ` + ss.CgroupPath + `/cgroup.procs | tr '\n' ' '; echo; cat /proc/[0-9]*/comm | tr '\n' ' '`},
		Stdout: &out, Stderr: &out,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %+v %v: %s", res, err, out.String())
	}
	f := strings.Split(out.String(), "\n")
	if len(f) < 4 {
		t.Fatalf("output %q", out.String())
	}
	if f[0] != "exec-host" {
		t.Errorf("hostname seen by Exec: %q", f[0])
	}
	if n, _ := strconv.Atoi(f[1]); n == 0 || n > 20 {
		t.Errorf("Exec's pid %q: not in the sandbox's pid namespace", f[1])
	}
	if !slices.Contains(strings.Fields(f[2]), f[1]) {
		t.Errorf("Exec's pid %s not in the cgroup's procs %q", f[1], f[2])
	}
	if !slices.Contains(strings.Fields(f[3]), "sleep") {
		t.Errorf("Exec does not see the program: %q", f[3])
	}
	// Exec in a sandbox without namespaces is placed in its cgroup too.
	sid2, err := r.CreateSandbox(ctx, SandboxConfig{Name: "exec-direct", PidsMax: 64})
	if err != nil {
		t.Fatal(err)
	}
	ss2, _ := r.SandboxStatus(sid2)
	out.Reset()
	res, err = r.Exec(ctx, sid2, ExecConfig{Args: []string{"cat", "/proc/self/cgroup"}, Stdout: &out})
	if err != nil || res.ExitCode != 0 || !strings.Contains(out.String(), filepath.Base(ss2.CgroupPath)) {
		t.Errorf("direct exec: %+v %v %q", res, err, out.String())
	}
	// A timeout kills the command and says so.
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	res, err = r.Exec(tctx, sid, ExecConfig{Args: []string{"sleep", "100"}})
	if err != nil || !res.TimedOut || res.Signal != syscall.SIGKILL {
		t.Errorf("exec timeout: %+v %v", res, err)
	}
	r.DeleteSandbox(ctx, sid)
	r.DeleteSandbox(ctx, sid2)
}

func TestOrphanStorm(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	ctx := ctxT(t)
	sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "storm", NoCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	orphans0 := r.rp.orphans.Load()
	want := make(map[string]int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := func(cfg ProcessConfig, code int) {
		id, err := r.Create(ctx, sid, cfg)
		if err == nil {
			err = r.Start(ctx, id)
		}
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		want[id] = code
		mu.Unlock()
	}
	for i := range 10 { // 10 × 100 orphans
		wg.Go(func() {
			start(helper("orphans", "100"), 0)
			for j := range 10 {
				n := (i*10 + j) % 7
				start(helper("exit", strconv.Itoa(n)), n)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	deadline := time.After(120 * time.Second)
	for len(want) > 0 {
		select {
		case ev := <-r.Events():
			code, ok := want[ev.ID]
			if !ok {
				continue
			}
			delete(want, ev.ID)
			if ev.ExitCode != code || ev.Signal != 0 {
				t.Errorf("%s: exit %d signal %v, want %d", ev.ID, ev.ExitCode, ev.Signal, code)
			}
		case <-deadline:
			t.Fatalf("%d exits never reported", len(want))
		}
	}
	// Every orphan is reaped: none is left as our zombie.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for r.rp.orphans.Load()-orphans0 < 1000 {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("reaped %d orphans, want 1000", r.rp.orphans.Load()-orphans0)
		}
	}
	for _, pid := range ourChildren() {
		if !alive(pid) {
			t.Errorf("zombie child %d", pid)
		}
	}
	t.Logf("reaped %d orphans while 110 supervised exits were reported", r.rp.orphans.Load()-orphans0)
	r.DeleteSandbox(ctx, sid)
}

// TestStubPlacement covers the fallback where ptrace is not allowed: the
// program goes through the stub, which is placed before it reads its spec.
func TestStubPlacement(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	needCgroups(t, r)
	ctx := ctxT(t)
	sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "stub", MemoryMax: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.sandboxes[sid].place.Store(int32(placeStub))
	r.mu.Unlock()
	ss, _ := r.SandboxStatus(sid)
	var out bytes.Buffer
	res, err := r.Exec(ctx, sid, ExecConfig{Args: []string{"cat", "/proc/self/cgroup"}, Stdout: &out})
	if err != nil || res.ExitCode != 0 || !strings.Contains(out.String(), filepath.Base(ss.CgroupPath)) {
		t.Errorf("exec through the stub: %+v %v %q", res, err, out.String())
	}
	id := mustStart(t, r, sid, ProcessConfig{Args: []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=200M", "count=1"}, Umask: -1})
	if ev := waitExit(t, r, id); ev.Reason != ReasonOOMKilled {
		t.Errorf("200 MiB through the stub in 32 MiB: %+v", ev)
	}
	r.DeleteSandbox(ctx, sid)
}

// TestDeleteWhileStarting deletes sandboxes while other goroutines keep
// starting programs and Exec commands in them: nothing may survive.
func TestDeleteWhileStarting(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	for _, sc := range []SandboxConfig{
		{Name: "race-plain", NoCgroup: true},
		{Name: "race-cgroup"},
		{Name: "race-uts", Namespaces: []Namespace{NamespaceUTS}, NoCgroup: true},
	} {
		t.Run(sc.Name, func(t *testing.T) {
			if r.cg == nil && !sc.NoCgroup {
				t.Skip("no cgroups")
			}
			for range 10 {
				ctx := ctxT(t)
				sid, err := r.CreateSandbox(ctx, sc)
				if err != nil {
					t.Fatal(err)
				}
				started := make(chan struct{}, 100)
				var wg sync.WaitGroup
				wg.Go(func() {
					for {
						id, err := r.Create(ctx, sid, shell("exec sleep 1000"))
						if err == nil {
							err = r.Start(ctx, id)
						}
						if err != nil {
							return
						}
						started <- struct{}{}
					}
				})
				wg.Go(func() {
					for {
						if _, err := r.Exec(ctx, sid, ExecConfig{Args: []string{"sleep", "1000"}}); err != nil {
							return
						}
					}
				})
				<-started
				if err := r.DeleteSandbox(ctx, sid); err != nil {
					t.Fatal(err)
				}
				wg.Wait()
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				var live []int
				for _, pid := range ourChildren() {
					if alive(pid) && !r.sp.is(pid) {
						live = append(live, pid)
					}
				}
				if len(live) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("processes survived DeleteSandbox: %v", live)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
