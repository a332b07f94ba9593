//go:build linux

package proc

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

func TestOwnerOf(t *testing.T) {
	for id, want := range map[string]int{
		"web-123-4":          123,
		"web-2-123-4":        123,
		"web-7n4026532123-4": 0, // another pid namespace: never judged
		"web-123":            0,
		"web--4":             0,
		"-0-1":               0,
		"supervise":          0,
	} {
		if got, ok := ownerOf(id); got != want || ok != (want != 0) {
			t.Errorf("ownerOf(%q) = %d, %v; want %d", id, got, ok, want)
		}
	}
}

// A cgroup left by a dead supervisor is emptied (its leftover program
// killed) and removed at start; one whose owner lives is left alone.
func TestSweepStaleCgroups(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	needCgroups(t, r)
	if ownerTag() != fmt.Sprint(os.Getpid()) {
		t.Skip("not in the initial pid namespace: nothing is swept")
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

	r.sweepStale()

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
