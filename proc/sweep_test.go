//go:build linux

package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOwnerOf(t *testing.T) {
	for id, want := range map[string]owner{
		"web-123-4":                    {sandbox: "web", tag: "123", pid: 123},
		"web-2-123-4":                  {sandbox: "web-2", tag: "123", pid: 123},
		"web-123r0a1b2c3d-4":           {sandbox: "web", tag: "123r0a1b2c3d", pid: 123},
		"web:0-123s4711r0a1b2c3d-4":    {sandbox: "web:0", tag: "123s4711r0a1b2c3d", pid: 123, start: 4711},
		"web-123s4711-4":               {sandbox: "web", tag: "123s4711", pid: 123, start: 4711},
		"web-7n4026532123-4":           {sandbox: "web", tag: "7n4026532123", otherNS: true},
		"web-1n4026532123rdeadbeef-12": {sandbox: "web", tag: "1n4026532123rdeadbeef", otherNS: true},
		"web-123r-4":                   {},
		"web-123rXYZ-4":                {},
		"web-123s-4":                   {},
		"web-123s0-4":                  {},
		"web-123sx1-4":                 {},
		"web-1n5s7-4":                  {},
		"web-1n-4":                     {},
		"web-123":                      {},
		"web--4":                       {},
		"-0-1":                         {},
		"supervise":                    {},
	} {
		got, ok := ownerOf(id)
		if got != want || ok != (want.tag != "") {
			t.Errorf("ownerOf(%q) = %+v, %v; want %+v", id, got, ok, want)
		}
	}
}

// Every run draws its own tag: names of two runs with the same pid and
// pid namespace cannot collide.
func TestOwnerTagIsPerRun(t *testing.T) {
	tag := ownerTag()
	o, ok := ownerOf("web-" + tag + "-1")
	if !ok || o.tag != tag || !strings.Contains(tag, "r") || len(tag) < len(strconv.Itoa(os.Getpid()))+9 {
		t.Fatalf("ownerTag %q parses as %+v, %v", tag, o, ok)
	}
	if !o.otherNS && o.start != selfStartTime() {
		t.Fatalf("ownerTag %q parses as %+v, %v", tag, o, ok)
	}
}

// A cgroup left by a dead supervisor is emptied (its leftover program
// killed) and removed at start; one whose owner lives is left alone.
func TestSweepStaleCgroups(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	needCgroups(t, r)
	if strings.Contains(ownerTag(), "n") {
		t.Skip("not in the initial pid namespace: owners there are not judged")
	}
	// A pid that has exited: the owner of the stale cgroup.
	_, ev := run(t, r, SandboxConfig{Name: "dead", NoCgroup: true}, shell("true"))
	st, err := r.Status(ev.ID)
	if err != nil || st.Pid == 0 {
		t.Fatalf("status %+v %v", st, err)
	}
	stale, err := r.cg.create(fmt.Sprintf("web-%d-1", st.Pid), SandboxConfig{PidsMax: 100})
	if err != nil {
		t.Fatal(err)
	}
	live, err := r.cg.create(fmt.Sprintf("web-%d-1", os.Getppid()), SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer live.remove()
	// A program that outlived its supervisor, in the stale cgroup.
	sid, err := r.CreateSandbox(ctxT(t), SandboxConfig{Name: "leftover", NoCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	id := mustStart(t, r, sid, shell("exec sleep 1000"))
	ps, _ := r.Status(id)
	if err := stale.addProc(ps.Pid); err != nil {
		t.Fatal(err)
	}

	// Ours by pid, but of an earlier run (a container's PID 1 restarted
	// after a SIGKILL has the same pid): dead.
	earlier, err := r.cg.create(fmt.Sprintf("web-%dr00000000-1", os.Getpid()), SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// Made in pid namespaces: the empty one is a dead namespace's, the
	// one with a process in it is left alone.
	deadNS, err := r.cg.create("web-1n4026599999rdeadbeef-1", SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	liveNS, err := r.cg.create("web-1n4026599998rdeadbeef-1", SandboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	sid2, err := r.CreateSandbox(ctxT(t), SandboxConfig{Name: "inns", NoCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	id2 := mustStart(t, r, sid2, shell("exec sleep 1000"))
	ps2, _ := r.Status(id2)
	if err := liveNS.addProc(ps2.Pid); err != nil {
		t.Fatal(err)
	}
	defer func() {
		liveNS.kill()
		waitExit(t, r, id2)
		liveNS.remove()
	}()

	r.sweepStale()

	// The sweep returned only once the leftover it killed was reaped.
	if err := syscall.Kill(ps.Pid, 0); err != syscall.ESRCH {
		t.Errorf("sweepStale returned with its killed leftover %d still there (kill 0: %v)", ps.Pid, err)
	}
	for _, cg := range []cgroup{earlier, deadNS} {
		if _, err := os.Stat(cg.path()); !os.IsNotExist(err) {
			t.Errorf("stale cgroup %s still there: %v", cg.path(), err)
		}
	}
	if _, err := os.Stat(liveNS.path()); err != nil {
		t.Errorf("the cgroup of a pid namespace with a process in it was swept: %v", err)
	}

	ev = waitExit(t, r, id)
	if ev.Signal != syscall.SIGKILL {
		t.Errorf("leftover ended with %+v, want SIGKILL", ev)
	}
	if _, err := os.Stat(stale.path()); !os.IsNotExist(err) {
		t.Errorf("stale cgroup %s still there: %v", stale.path(), err)
	}
	if _, err := os.Stat(live.path()); err != nil {
		t.Errorf("the cgroup of a live owner was swept: %v", err)
	}
}

func TestParseProcStat(t *testing.T) {
	// A command name is the program's to choose: ") S 1" in it must not
	// shift the fields.
	line := "4242 (evil) S 1 (x) Z 1 2 3 4 5 4194372 7 8 9 10 11 12 13 14 20 0 1 0 987654 100 5 18446744073709551615\n"
	st, err := parseProcStat([]byte(line))
	if err != nil || st.state != 'Z' || st.flags != 4194372 || st.startTime != 987654 {
		t.Errorf("parseProcStat = %+v, %v; want state Z, flags 4194372, start 987654", st, err)
	}
	for _, bad := range []string{"", "4242 (x", "4242 (x) S 1 2", "4242 (x) S 1 2 3 4 5 x 7 8 9 10 11 12 13 14 15 16 17 18 19 20"} {
		if st, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parseProcStat(%q) = %+v, want an error", bad, st)
		}
	}
}

// The owner of a cgroup is judged by its state and start time: a zombie
// (a SIGKILLed supervisor its parent has not reaped yet) is dead, and so
// is a live process that got the owner's pid later; an owner alive with
// the recorded start time keeps its cgroups.
func TestSweepJudgesOwnersByStateAndStartTime(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	needCgroups(t, r)
	if strings.Contains(ownerTag(), "n") {
		t.Skip("not in the initial pid namespace: owners there are not judged")
	}
	// A zombie: the child of a process that never waits.
	dir := t.TempDir()
	sid, err := r.CreateSandbox(ctxT(t), SandboxConfig{Name: "zombie-parent", NoCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	id := mustStart(t, r, sid, shell("sleep 0 & echo $! > "+dir+"/zombie; exec sleep 1000"))
	defer func() {
		_ = r.Signal(id, syscall.SIGKILL)
		waitExit(t, r, id)
	}()
	var zombie int
	for deadline := time.Now().Add(60 * time.Second); ; {
		b, _ := os.ReadFile(dir + "/zombie")
		zombie, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if st, err := readProcStat(zombie); zombie > 0 && err == nil && st.state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no zombie to own a cgroup (pid %d)", zombie)
		}
		time.Sleep(10 * time.Millisecond)
	}
	parent, err := readProcStat(os.Getppid())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) cgroup {
		cg, err := r.cg.create(name, SandboxConfig{})
		if err != nil {
			t.Fatal(err)
		}
		return cg
	}
	zombieOld := mk(fmt.Sprintf("a-%d-1", zombie))
	reused := mk(fmt.Sprintf("b-%ds%dr00000000-1", os.Getppid(), parent.startTime+1))
	live := mk(fmt.Sprintf("c-%ds%dr00000000-1", os.Getppid(), parent.startTime))
	defer live.remove()

	r.sweepStale()

	for _, cg := range []cgroup{zombieOld, reused} {
		if _, err := os.Stat(cg.path()); !os.IsNotExist(err) {
			t.Errorf("the cgroup %s of a dead owner is still there: %v", cg.path(), err)
		}
	}
	if _, err := os.Stat(live.path()); err != nil {
		t.Errorf("the cgroup of a live owner was swept: %v", err)
	}
}
