//go:build linux

package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// parentOfPid reads pid's parent from /proc.
func parentOfPid(t *testing.T, pid int) int {
	t.Helper()
	pp, err := parentOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	return pp
}

// fdsOf lists the descriptors of pid.
func fdsOf(pid int) []string {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		out = append(out, e.Name()+"="+l)
	}
	return out
}

// holdPipes opens n pipes (2n descriptors, close-on-exec, as the
// supervisor holds its programs' pipes) until the test ends.
// The descriptor limit is raised for it where it is too low (the cgroup
// v2 VM's init gives 4,096), and the test skipped where it cannot be; the
// pipes are closed at the test's end, also when it fails half-way (the
// tests after it would run out of descriptors).
func holdPipes(t *testing.T, n int) {
	t.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if need := uint64(2*n + 1024); lim.Cur < need {
		raised := unix.Rlimit{Cur: need, Max: max(lim.Max, need)}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err != nil {
			t.Skipf("holding %d pipes needs %d descriptors; the limit is %d and cannot be raised: %v", n, need, lim.Cur, err)
		}
		t.Cleanup(func() { _ = unix.Setrlimit(unix.RLIMIT_NOFILE, &lim) })
	}
	var held []int
	t.Cleanup(func() { closeFds(held) })
	for range n {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		held = append(held, p[:]...)
	}
}

// TestSpawnerStartsOurChildren: through the spawner a program is our
// child, in its cgroup (v1 by ptrace, v2 by clone3 into it), with exactly
// fds 0-2 and the extra files however many descriptors we hold, while
// the spawner holds a handful and is in no program's cgroup.
func TestSpawnerStartsOurChildren(t *testing.T) {
	needRoot(t)
	holdPipes(t, 600)
	for _, mode := range []string{"", "v2"} {
		t.Run("cgroup-"+mode, func(t *testing.T) {
			if mode == "v2" {
				if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.controllers"); err != nil {
					if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
						t.Skip("no cgroup2 hierarchy mounted")
					}
				}
			}
			r := newRuntime(t, Options{CgroupMode: mode, Spawner: SpawnerAlways})
			needCgroups(t, r)
			ctx := ctxT(t)
			for _, umask := range []int{-1, 0o22} { // direct fork, and the stub
				sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "spawned"})
				if err != nil {
					t.Fatal(err)
				}
				ss, _ := r.SandboxStatus(sid)
				out, ch := lines(t)
				r5, w5, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				cfg := shell(`ls /proc/self/fd | tr '\n' ' '; echo; cat /proc/self/cgroup; echo end; exec sleep 1000`)
				cfg.Stdout, cfg.Umask = out, umask
				cfg.ExtraFiles = map[int]*os.File{5: w5}
				id := mustStart(t, r, sid, cfg)
				w5.Close()
				r5.Close()
				// ls's own directory descriptor is listed too (3).
				if got := next(t, ch); got != "0 1 2 3 5 " {
					t.Errorf("umask %o: the program's descriptors: %q, want 0 1 2 5 (and ls's 3)", umask, got)
				}
				var cgLines []string
				for l := next(t, ch); l != "end"; l = next(t, ch) {
					cgLines = append(cgLines, l)
				}
				if !strings.Contains(strings.Join(cgLines, "\n"), filepath.Base(ss.CgroupPath)) {
					t.Errorf("umask %o: the program is not in %s:\n%s", umask, ss.CgroupPath, strings.Join(cgLines, "\n"))
				}
				st, _ := r.Status(id)
				if pp := parentOfPid(t, st.Pid); pp != os.Getpid() {
					t.Errorf("umask %o: the program's parent is %d, want us (%d)", umask, pp, os.Getpid())
				}
				sp := r.sp.cur
				if sp == nil || r.sp.starts.Load() != 1 {
					t.Fatalf("umask %o: the spawner did not fork it (%d started)", umask, r.sp.starts.Load())
				}
				// 0-3, the Go runtime's cgroup files, and what the test
				// binary inherited not close-on-exec (supervise marks those
				// at its start): a handful, not our 1,200 pipe ends.
				if fds := fdsOf(sp.pid); len(fds) > 10 {
					t.Errorf("the spawner holds %d descriptors: %v", len(fds), fds)
				}
				procs, _ := r.sandboxes[sid].cg.procs()
				for _, pid := range procs {
					if pid == sp.pid {
						t.Errorf("the spawner %d is in the program's cgroup", pid)
					}
				}
				if err := r.DeleteSandbox(ctx, sid); err != nil {
					t.Fatal(err)
				}
				if !alive(sp.pid) || sp.exited.Load() {
					t.Errorf("the spawner died with the sandbox")
				}
			}
		})
	}
}

// TestSpawnerDiesAndComesBack: a start right after the spawner was killed
// succeeds (by the direct fork, or a new spawner), once in a sandbox with
// a cgroup (a lost child stops under ptrace) and once through the stub,
// and the next starts go through a new spawner.
func TestSpawnerDiesAndComesBack(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{Spawner: SpawnerAlways})
	ctx := ctxT(t)
	for _, umask := range []int{-1, 0o22} {
		sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "respawn"})
		if err != nil {
			t.Fatal(err)
		}
		start := func() {
			t.Helper()
			id := mustStart(t, r, sid, ProcessConfig{Args: []string{"true"}, Umask: umask})
			if ev := waitExit(t, r, id); ev.Reason != ReasonCompleted {
				t.Errorf("umask %o: %+v", umask, ev)
			}
		}
		for range 3 {
			start()
			before := r.sp.starts.Load()
			if err := unix.Kill(r.sp.cur.pid, unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			start() // directly, or through a new spawner
			deadline := time.Now().Add(60 * time.Second)
			for r.sp.starts.Load() == before && time.Now().Before(deadline) {
				start()
			}
			if r.sp.starts.Load() == before {
				t.Fatalf("umask %o: no new spawner after a kill", umask)
			}
		}
		if err := r.DeleteSandbox(ctx, sid); err != nil {
			t.Fatal(err)
		}
	}
	if kids := ourChildren(); len(kids) != 1 { // the spawner
		t.Errorf("our children: %v, want the spawner alone", kids)
	}
}

// TestSpawnerForkErrors: what the fork itself refuses comes back as the
// same error as from a direct fork, and the spawner lives on.
func TestSpawnerForkErrors(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{Spawner: SpawnerAlways})
	ctx := ctxT(t)
	sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "errors", NoCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "noexec")
	if err := os.WriteFile(script, []byte("#!/no/such/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	id, err := r.Create(ctx, sid, ProcessConfig{Args: []string{script}, Umask: -1})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Start(ctx, id)
	if err == nil || !errorsIsErrno(err, syscall.ENOENT) {
		t.Errorf("start of a script with a missing interpreter: %v, want ENOENT", err)
	}
	pid := r.sp.cur.pid
	id = mustStart(t, r, sid, ProcessConfig{Args: []string{"sh", "-c", "exit 7"}, Umask: -1})
	if ev := waitExit(t, r, id); ev.ExitCode != 7 {
		t.Errorf("exit %+v", ev)
	}
	if r.sp.cur.pid != pid || r.sp.starts.Load() != 1 {
		t.Errorf("the spawner was replaced after a failed exec")
	}
	r.DeleteSandbox(ctx, sid)
}

func errorsIsErrno(err error, want syscall.Errno) bool {
	for e := err; e != nil; {
		if en, ok := e.(syscall.Errno); ok && en == want {
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

// TestSpawnerAuto: the spawner is used once a start passes a descriptor
// numbered above the threshold, not before.
func TestSpawnerAuto(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{Spawner: SpawnerAuto})
	if r.sp.mode != SpawnerAuto {
		t.Skip("PROC_TEST_SPAWNER forces a mode")
	}
	ctx := ctxT(t)
	sid, err := r.CreateSandbox(ctx, SandboxConfig{Name: "auto", NoCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	id := mustStart(t, r, sid, ProcessConfig{Args: []string{"true"}, Umask: -1})
	waitExit(t, r, id)
	if n := r.sp.starts.Load(); n != 0 {
		t.Errorf("spawner started with few descriptors held")
	}
	holdPipes(t, spawnerThreshold/2+10)
	out, ch := lines(t)
	cfg := shell("echo $PPID")
	cfg.Stdout = out
	id = mustStart(t, r, sid, cfg)
	if got := next(t, ch); got != strconv.Itoa(os.Getpid()) {
		t.Errorf("parent %s, want us", got)
	}
	waitExit(t, r, id)
	if n := r.sp.starts.Load(); n != 1 {
		t.Errorf("spawner started %d times with many descriptors held, want 1", n)
	}
	r.DeleteSandbox(ctx, sid)
}

// TestReaperKillsAnUnknownTracee: a child forked under ptrace whose pid
// never reached us (its spawner died before answering) stops at its exec
// and must not stay there: the reaper kills it before it runs anything.
func TestReaperKillsAnUnknownTracee(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{Spawner: SpawnerAlways})
	if err := r.sp.ready(); err != nil {
		t.Fatal(err)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	orphans := r.rp.orphans.Load()
	// Forked as a start would be, but never registered with the reaper.
	pid, err := r.sp.forkExec("/bin/sleep", []string{"sleep", "1000"}, &syscall.ProcAttr{
		Files: []uintptr{null.Fd(), null.Fd(), null.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Ptrace: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			_ = unix.Kill(pid, unix.SIGKILL)
			t.Fatalf("the unknown tracee %d is still there:\n%s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r.rp.orphans.Load() == orphans {
		t.Errorf("the tracee was not reaped as an orphan")
	}
}
