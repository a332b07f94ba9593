//go:build linux

package cgroups

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Root tests on the real cgroupfs at /sys/fs/cgroup, v1 (the CI host) or v2
// (the VM of integration/v2vm). Each works under a subtree of its own,
// "supervise-test-<random>", and removes it; no other cgroup is changed.
// With SUPERVISE_TEST_CGROUP=v2 (set by the v2 VM's init) a host that is not
// v2 with memory, cpu and pids fails the tests instead of skipping them.

const envRequire = "SUPERVISE_TEST_CGROUP"

func testName(prefix string) string {
	b := make([]byte, 4)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// skipf skips, or fails where the environment promises the capability.
func skipf(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv(envRequire) != "" {
		t.Fatalf("%s=%s but: "+format, append([]any{envRequire, os.Getenv(envRequire)}, args...)...)
	}
	t.Skipf(format, args...)
}

func realRoot(t *testing.T) *Root {
	t.Helper()
	return realRootAt(t, DefaultFSRoot, ModeDetect)
}

func realRootAt(t *testing.T, fsroot string, mode Mode) *Root {
	t.Helper()
	if os.Geteuid() != 0 {
		skipf(t, "needs root to create cgroups under %s (uid %d)", fsroot, os.Geteuid())
	}
	var st unix.Statfs_t
	if err := unix.Statfs(fsroot, &st); err != nil {
		skipf(t, "no cgroupfs at %s: %v", fsroot, err)
	}
	r, err := Open(Options{FSRoot: fsroot, Path: testName("supervise-test-"), Mode: mode})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if r.Mode() == ModeNone {
		skipf(t, "no cgroup hierarchy under %s", fsroot)
	}
	if want := os.Getenv(envRequire); want != "" && r.Mode().String() != want {
		t.Fatalf("%s=%s but the mode is %v", envRequire, want, r.Mode())
	}
	t.Logf("mode %v, subtree %v", r.Mode(), r.Dirs())
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, d := range r.Dirs() {
			if exists(d) {
				t.Errorf("%s left behind", d)
			}
		}
	})
	return r
}

func mustCreate(t *testing.T, r *Root, name string, res Resources) *Cgroup {
	t.Helper()
	cg, err := r.Create(name, res)
	if err != nil {
		var ce *ControllerError
		if errors.As(err, &ce) {
			skipf(t, "%v", err)
		}
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		if err := cg.Delete(); err != nil {
			t.Errorf("Delete: %v", err)
		}
		for _, d := range cg.Dirs() {
			if exists(d) {
				t.Errorf("%s left after Delete", d)
			}
		}
	})
	return cg
}

type placement int

const (
	placeDefault placement = iota // clone into on v2, stopped start on v1
	placeCloneInto
	placeStopped // AddProc while the process waits on fd 3
)

// startIn starts cmd inside cg: cloned into it (v2), or placed with AddProc
// before it does anything (the process must block on fd 3 until released:
// helpers do so with SUPERVISE_CGROUPS_WAIT=1, shell scripts with
// `read x <&3`).
func startIn(t *testing.T, cg *Cgroup, cmd *exec.Cmd, how placement) {
	t.Helper()
	if how == placeDefault {
		how = placeStopped
		if cg.root.mode == ModeV2 {
			how = placeCloneInto
		}
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	switch how {
	case placeCloneInto:
		fd, err := cg.OpenFD()
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %v in %s: %v", cmd.Args, cg.Path(), err)
		}
	case placeStopped:
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.ExtraFiles = []*os.File{r}
		cmd.Env = append(cmd.Env, envWait+"=1")
		err = cmd.Start()
		r.Close()
		if err != nil {
			w.Close()
			t.Fatalf("starting %v: %v", cmd.Args, err)
		}
		if err := cg.AddProc(cmd.Process.Pid); err != nil {
			w.Close()
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal(err)
		}
		w.Write([]byte{1})
		w.Close()
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
}

func signalOf(err error) syscall.Signal {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return 0
}

func memberOf(cg *Cgroup, pid int) bool {
	h := cg.hiers[0]
	key := ""
	if cg.root.mode == ModeV1 {
		key = h.controllers[0]
	}
	return isMember(pid, key, cleanRel(h.rel+"/"+cg.name))
}

func TestRealLimitsWritten(t *testing.T) {
	r := realRoot(t)
	cg := mustCreate(t, r, "limits", Resources{MemoryMax: 32 << 20, CPUMax: 0.2, PidsMax: 20})
	want := map[string]string{"pids.max": "20"}
	if r.Mode() == ModeV2 {
		want["memory.max"] = "33554432"
		want["cpu.max"] = "20000 100000"
		if exists(filepath.Join(cg.Path(), "memory.swap.max")) {
			want["memory.swap.max"] = "0"
		}
	} else {
		want["memory.limit_in_bytes"] = "33554432"
		want["cpu.cfs_quota_us"] = "20000"
		want["cpu.cfs_period_us"] = "100000"
		if exists(filepath.Join(cg.dir("memory"), "memory.memsw.limit_in_bytes")) {
			want["memory.memsw.limit_in_bytes"] = "33554432"
		}
	}
	for file, v := range want {
		ctrl, _, _ := strings.Cut(file, ".")
		got, err := readString(filepath.Join(cg.dir(ctrl), file))
		if err != nil || got != v {
			t.Errorf("%s = %q, %v; want %q", file, got, err, v)
		}
	}
}

func TestRealAddProcCounted(t *testing.T) {
	r := realRoot(t)
	cg := mustCreate(t, r, "addproc", Resources{PidsMax: 64})
	cmd := helperCmd("sleep", "")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	if memberOf(cg, pid) {
		t.Fatal("member before AddProc")
	}
	if err := cg.AddProc(pid); err != nil {
		t.Fatal(err)
	}
	pids, err := cg.Procs()
	if err != nil || !slices.Contains(pids, pid) {
		t.Fatalf("Procs = %v, %v; want %d in it", pids, err, pid)
	}
	if !memberOf(cg, pid) {
		t.Errorf("/proc/%d/cgroup does not show %s", pid, cg.Path())
	}
	st, err := cg.Stats()
	if err != nil || st.Pids < 1 {
		t.Errorf("Stats = %+v, %v; want Pids >= 1", st, err)
	}
	if err := cg.Delete(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); signalOf(err) != syscall.SIGKILL {
		t.Errorf("placed process after Delete: %v, want killed", err)
	}
}

// v2 only: the child is created inside the cgroup by clone3.
// Without a pids limit a v1 cgroup stays out of a pids hierarchy of its
// own, and its tasks are counted from another hierarchy's tasks file: the
// figure is the process's threads all the same.
func TestRealTasksWithoutAPidsLimit(t *testing.T) {
	r := realRoot(t)
	cg := mustCreate(t, r, "nopidslimit", Resources{})
	if h := r.byCtrl["pids"]; r.Mode() == ModeV1 && h != nil && len(h.controllers) == 1 {
		if d := filepath.Join(h.dir(), cg.Name()); exists(d) {
			t.Errorf("%s exists for a cgroup without a pids limit", d)
		}
	}
	cmd := helperCmd("sleep", "")
	startIn(t, cg, cmd, placeDefault)
	var threads int64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		threads = int64(len(ents))
		st, err := cg.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Pids == threads {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Stats().Pids = %d, the process has %d threads", st.Pids, threads)
		}
	}
}

func TestRealCloneInto(t *testing.T) {
	r := realRoot(t)
	if r.Mode() != ModeV2 {
		t.Skip("CLONE_INTO_CGROUP needs cgroup v2 (a v1 directory gives EBADF); the hybrid unified hierarchy is covered by TestRealHybridUnifiedPlacement")
	}
	cg := mustCreate(t, r, "cloneinto", Resources{PidsMax: 64})
	cmd := helperCmd("sleep", "")
	startIn(t, cg, cmd, placeCloneInto)
	if !memberOf(cg, cmd.Process.Pid) {
		t.Fatalf("child %d is not in %s", cmd.Process.Pid, cg.Path())
	}
}

// On a hybrid host the controller-less cgroup2 at /sys/fs/cgroup/unified can
// place (CLONE_INTO_CGROUP, cgroup.kill) but not limit.
func TestRealHybridUnifiedPlacement(t *testing.T) {
	unified := filepath.Join(DefaultFSRoot, "unified")
	if !exists(filepath.Join(unified, "cgroup.controllers")) {
		t.Skip("no hybrid cgroup2 mount at " + unified)
	}
	r := realRootAt(t, unified, ModeV2)
	ctrls, _ := readWords(filepath.Join(unified, "cgroup.controllers"))
	if !contains(ctrls, "memory") {
		_, err := r.Create("limited", Resources{MemoryMax: 32 << 20})
		if want := "cgroups: memory controller not available: "; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("memory limit on %s (controllers %v): %v, want %q…", unified, ctrls, err, want)
		}
	}
	cg := mustCreate(t, r, "place", Resources{})
	cmd := helperCmd("sleep", "")
	startIn(t, cg, cmd, placeCloneInto)
	if !memberOf(cg, cmd.Process.Pid) {
		t.Fatalf("child %d is not in %s", cmd.Process.Pid, cg.Path())
	}
	if err := cg.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); signalOf(err) != syscall.SIGKILL {
		t.Errorf("after Kill: %v", err)
	}
}

func TestRealOOM(t *testing.T) {
	r := realRoot(t)
	cg := mustCreate(t, r, "oom", Resources{MemoryMax: 32 << 20})
	// A hog well below the limit lives and counts no OOM kill…
	small := helperCmd("hog", "8")
	startIn(t, cg, small, placeDefault)
	if err := small.Wait(); err != nil {
		t.Fatalf("8 MiB under 32 MiB: %v", err)
	}
	if n, err := cg.OOMKills(); err != nil || n != 0 {
		t.Fatalf("OOMKills after a small hog = %d, %v", n, err)
	}
	// …a 200 MiB one is OOM-killed, and counted.
	big := helperCmd("hog", "200")
	var out strings.Builder
	big.Stdout = &out
	startIn(t, cg, big, placeDefault)
	err := big.Wait()
	if signalOf(err) != syscall.SIGKILL {
		t.Fatalf("200 MiB under 32 MiB: %v (output %q), want SIGKILL", err, out.String())
	}
	n, err := cg.OOMKills()
	if err != nil || n < 1 {
		t.Fatalf("OOMKills = %d, %v; want >= 1", n, err)
	}
	st, err := cg.Stats()
	if err != nil || st.OOMKills != n {
		t.Errorf("Stats = %+v, %v", st, err)
	}
	t.Logf("oom kills %d, stats %+v", n, st)
}

func TestRealPidsMax(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	r := realRoot(t)
	cg := mustCreate(t, r, "pids", Resources{PidsMax: 20})
	script := `i=0; while [ $i -lt 40 ]; do sleep 60 & i=$((i+1)); done; wait`
	if r.Mode() == ModeV1 {
		script = "read x <&3; " + script
	}
	cmd := exec.Command("sh", "-c", script)
	startIn(t, cg, cmd, placeDefault)
	events := filepath.Join(cg.dir("pids"), "pids.events")
	deadline := time.Now().Add(60 * time.Second)
	var hits uint64
	for p := newPoller(); ; p.wait() {
		var err error
		if hits, _, err = readKeyed(events, "max"); err != nil {
			t.Fatal(err)
		}
		if hits > 0 {
			break
		}
		if time.Now().After(deadline) {
			pids, _ := cg.Procs()
			t.Fatalf("the fork loop never hit pids.max: %d processes", len(pids))
		}
	}
	st, err := cg.Stats()
	if err != nil || st.Pids > 20 || st.Pids < 1 {
		t.Errorf("Stats = %+v, %v; want 1..20 tasks", st, err)
	}
	pids, _ := cg.Procs()
	if len(pids) > 20 {
		t.Errorf("%d processes under pids.max=20", len(pids))
	}
	t.Logf("pids.events max %d, pids.current %d, processes %d", hits, st.Pids, len(pids))
	if err := cg.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

func TestRealCPUMax(t *testing.T) {
	r := realRoot(t)
	cg := mustCreate(t, r, "cpu", Resources{CPUMax: 0.2})
	const wall = 2 * time.Second
	cmd := helperCmd("busy", wall.String())
	start := time.Now()
	startIn(t, cg, cmd, placeDefault)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	st, err := cg.Stats()
	if err != nil {
		t.Fatal(err)
	}
	share := st.CPUUsage.Seconds() / elapsed.Seconds()
	t.Logf("busy loop under cpu_max=0.2: %v CPU in %v wall (%.0f%% of a core)", st.CPUUsage, elapsed.Round(time.Millisecond), share*100)
	// Wide bounds: a loaded machine may give less, never much more.
	if st.CPUUsage <= 0 || share > 0.35 {
		t.Errorf("CPU share %.2f, want about 0.2 (0 < share <= 0.35)", share)
	}
}

// A program whose children setsid and daemonize: every strategy Kill may
// use leaves nobody alive, checked through pidfds, and the cgroup empty.
func TestRealKillDaemons(t *testing.T) {
	r := realRoot(t)
	strategies := []killStrategy{killSignals}
	switch r.Mode() {
	case ModeV2:
		strategies = append(strategies, killFile, killFreeze)
	case ModeV1:
		if r.byCtrl["freezer"] != nil {
			strategies = append(strategies, killFreeze)
		}
	}
	for _, s := range strategies {
		t.Run(s.String(), func(t *testing.T) {
			cg := mustCreate(t, r, "daemons-"+strings.ReplaceAll(s.String(), ".", "-"), Resources{})
			switch {
			case s == killFile && !exists(filepath.Join(cg.Path(), "cgroup.kill")),
				s == killFreeze && r.Mode() == ModeV2 && !exists(filepath.Join(cg.Path(), "cgroup.freeze")):
				skipf(t, "%v is not offered by this kernel", s)
			}
			const n = 3
			cmd := helperCmd("daemons", strconv.Itoa(n))
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			startIn(t, cg, cmd, placeDefault)
			pids := []int{cmd.Process.Pid}
			sc := bufio.NewScanner(stdout)
			for sc.Scan() && sc.Text() != "ready" {
				pid, err := strconv.Atoi(sc.Text())
				if err != nil {
					t.Fatalf("helper said %q", sc.Text())
				}
				pids = append(pids, pid)
			}
			if len(pids) != n+1 {
				t.Fatalf("got pids %v, want %d", pids, n+1)
			}
			var fds []int
			for _, pid := range pids {
				fd, err := unix.PidfdOpen(pid, 0)
				if err != nil {
					t.Fatalf("pidfd of %d: %v", pid, err)
				}
				defer unix.Close(fd)
				fds = append(fds, fd)
				if !memberOf(cg, pid) {
					t.Fatalf("%d is not in the cgroup", pid)
				}
				if sid, _ := unix.Getsid(pid); pid != cmd.Process.Pid && sid != pid {
					t.Fatalf("%d is not a session leader (sid %d)", pid, sid)
				}
			}
			start := time.Now()
			if err := cg.kill(s); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			for i, fd := range fds {
				pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				if n, err := unix.Poll(pfd, 10000); err != nil || n != 1 {
					t.Errorf("pid %d still alive after Kill (poll %d, %v)", pids[i], n, err)
				}
			}
			if left, err := cg.Procs(); err != nil || len(left) != 0 {
				t.Errorf("Procs after Kill = %v, %v", left, err)
			}
			if err := cmd.Wait(); signalOf(err) != syscall.SIGKILL {
				t.Errorf("helper: %v", err)
			}
			if err := cg.Delete(); err != nil {
				t.Fatal(err)
			}
			for _, d := range cg.Dirs() {
				if exists(d) {
					t.Errorf("%s left after Delete", d)
				}
			}
			t.Logf("%v killed %d processes in %v", s, len(pids), took)
		})
	}
}

// Delete of a group with live processes kills them and leaves no directory
// in any hierarchy.
func TestRealDeleteLeavesNoDir(t *testing.T) {
	r := realRoot(t)
	cg, err := r.Create("delete", Resources{MemoryMax: 64 << 20, PidsMax: 64})
	if err != nil {
		var ce *ControllerError
		if errors.As(err, &ce) {
			skipf(t, "%v", err)
		}
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	for i := 0; i < 3; i++ {
		cmd := helperCmd("sleep", "")
		startIn(t, cg, cmd, placeDefault)
		cmds = append(cmds, cmd)
	}
	if err := cg.Delete(); err != nil {
		t.Fatal(err)
	}
	for _, d := range cg.Dirs() {
		if exists(d) {
			t.Errorf("%s left after Delete", d)
		}
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); signalOf(err) != syscall.SIGKILL {
			t.Errorf("pid %d: %v", cmd.Process.Pid, err)
		}
	}
	if err := cg.Delete(); err != nil {
		t.Errorf("second Delete: %v", err)
	}
}

// The systemd shape on v2: the supervisor sits in a non-root cgroup of its
// own; Open with the default Path moves it into "<own>/supervisor" and
// creates sandboxes under "<own>/supervise" with working limits. It moves
// this test process, so it runs only where the process starts in the root
// cgroup (the v2 VM), and moves it back.
func TestRealV2DefaultPathLeafMove(t *testing.T) {
	if os.Geteuid() != 0 {
		skipf(t, "needs root")
	}
	self, err := ownCgroups("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if mode, _, _ := detect(DefaultFSRoot); mode != ModeV2 {
		skipf(t, "needs cgroup v2 at %s (mode %v)", DefaultFSRoot, mode)
	}
	if p, ok := self[""]; !ok || p != "/" {
		skipf(t, "moves the test process between cgroups: runs only from the root cgroup (here %q)", p)
	}
	rootProcs := filepath.Join(DefaultFSRoot, "cgroup.procs")
	own := filepath.Join(DefaultFSRoot, testName("supervise-test-own-"))
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(os.Getpid())
	t.Cleanup(func() {
		if err := (realKernel{}).Write(rootProcs, pid); err != nil {
			t.Errorf("moving back to the root cgroup: %v", err)
		}
		for _, d := range []string{filepath.Join(own, leafName), own} {
			if err := (realKernel{}).Rmdir(d); err != nil && !isNotExist(err) {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	if err := (realKernel{}).Write(filepath.Join(own, "cgroup.procs"), pid); err != nil {
		t.Fatal(err)
	}
	r, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if exists(filepath.Join(own, subtreeName)) {
			t.Errorf("Close left %s", filepath.Join(own, subtreeName))
		}
	}()
	if got := r.Dirs()[0]; got != filepath.Join(own, subtreeName) {
		t.Fatalf("subtree %s, want %s", got, filepath.Join(own, subtreeName))
	}
	leafProcs, _ := readProcs(filepath.Join(own, leafName, "cgroup.procs"))
	if !slices.Contains(leafProcs, os.Getpid()) {
		t.Errorf("leaf holds %v, not us (%d)", leafProcs, os.Getpid())
	}
	if ctl, _ := readWords(filepath.Join(own, "cgroup.subtree_control")); !contains(ctl, "memory") || !contains(ctl, "pids") || !contains(ctl, "cpu") {
		t.Errorf("own subtree_control %v", ctl)
	}
	cg, err := r.Create("web", Resources{MemoryMax: 32 << 20, PidsMax: 64})
	if err != nil {
		t.Fatal(err)
	}
	big := helperCmd("hog", "200")
	startIn(t, cg, big, placeCloneInto)
	if err := big.Wait(); signalOf(err) != syscall.SIGKILL {
		t.Errorf("hog in the delegated subtree: %v", err)
	}
	if n, _ := cg.OOMKills(); n < 1 {
		t.Errorf("OOMKills %d", n)
	}
	if err := cg.Delete(); err != nil {
		t.Fatal(err)
	}
}

// A pid reused by a process outside the group is never signalled:
// membership is checked through a pidfd.
func TestRealSignalOnlyMembers(t *testing.T) {
	r := realRoot(t)
	cg := mustCreate(t, r, "members", Resources{})
	outside := helperCmd("sleep", "")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { outside.Process.Kill(); outside.Wait() }()
	cg.signalAll([]int{outside.Process.Pid})
	pfd := []unix.PollFd{{Fd: int32(pidfdOf(t, outside.Process.Pid)), Events: unix.POLLIN}}
	if n, _ := unix.Poll(pfd, 300); n != 0 {
		t.Fatal("a process outside the cgroup was killed")
	}
}

func pidfdOf(t *testing.T, pid int) int {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// An ordinary user whose cgroup was delegated to it (v2: the directory and
// its cgroup.procs, cgroup.subtree_control and cgroup.threads chowned to
// it, as systemd's Delegate=yes and user@UID.service do) gets limits: its
// supervise makes the subtree below its own cgroup, as root's does.
func TestRealV2DelegatedToAUser(t *testing.T) {
	if os.Geteuid() != 0 {
		skipf(t, "needs root, to delegate a cgroup to uid 65534")
	}
	if mode, _, _ := detect(DefaultFSRoot); mode != ModeV2 {
		skipf(t, "needs cgroup v2 at %s (mode %v)", DefaultFSRoot, mode)
	}
	self, err := ownCgroups("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(DefaultFSRoot, self[""])
	for _, c := range []string{"+memory", "+pids", "+cpu"} {
		_ = (realKernel{}).Write(filepath.Join(parent, "cgroup.subtree_control"), c)
	}
	d := filepath.Join(parent, testName("supervise-test-deleg-"))
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, x := range []string{filepath.Join(d, subtreeName), filepath.Join(d, leafName), d} {
			if err := (realKernel{}).Rmdir(x); err != nil && !isNotExist(err) {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
		if err := os.Chown(filepath.Join(d, f), 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	fd, err := syscall.Open(d, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	cmd := helperCmd("delegated", "")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: 65534, Gid: 65534},
		UseCgroupFD: true, CgroupFD: fd,
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("supervise's cgroups as uid 65534 in a delegated cgroup: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
