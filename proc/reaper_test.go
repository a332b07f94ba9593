//go:build linux

package proc

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReaperBurstOfExits: many children ending together are each reported
// once with their own status, though the walks of a burst are shared.
func TestReaperBurstOfExits(t *testing.T) {
	r := newReaper(nil)
	defer r.close()
	const n = 100
	got := make(chan [2]int, n)
	want := map[int]int{}
	for i := range n {
		code := i % 7
		pid, err := r.spawn(func() (int, error) {
			return syscall.ForkExec("/bin/sh", []string{"sh", "-c", "sleep 0.2; exit " + string(rune('0'+code))},
				&syscall.ProcAttr{Files: []uintptr{0, 1, 2}})
		}, func(ws unix.WaitStatus) { got <- [2]int{0, ws.ExitStatus()} })
		if err != nil {
			t.Fatal(err)
		}
		want[pid] = code
	}
	counts := map[int]int{}
	deadline := time.After(time.Minute)
	for range n {
		select {
		case g := <-got:
			counts[g[1]]++
		case <-deadline:
			t.Fatalf("only %d of %d exits reported", len(counts), n)
		}
	}
	for code := range 7 {
		wantN := 0
		for _, c := range want {
			if c == code {
				wantN++
			}
		}
		if counts[code] != wantN {
			t.Errorf("exit %d reported %d times, want %d", code, counts[code], wantN)
		}
	}
	r.mu.Lock()
	left := len(r.waiting)
	r.mu.Unlock()
	if left != 0 {
		t.Errorf("%d children still registered after every exit", left)
	}
	t.Logf("%d exits, %d walks of every child", n, r.walks.Load())
}

// TestReaperTracedStop: the stop of a child started under ptrace is
// reported by its pid, then its exit once it was let go, while other
// children run.
func TestReaperTracedStop(t *testing.T) {
	r := newReaper(nil)
	defer r.close()
	bystanders := make(chan struct{}, 20)
	var pids []int
	for range cap(bystanders) {
		pid, err := r.spawn(func() (int, error) {
			return syscall.ForkExec("/bin/sleep", []string{"sleep", "30"}, &syscall.ProcAttr{Files: []uintptr{0, 1, 2}})
		}, func(unix.WaitStatus) { bystanders <- struct{}{} })
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	defer func() {
		for _, pid := range pids {
			_ = r.kill(pid, false, unix.SIGKILL)
		}
		for range pids {
			<-bystanders
		}
	}()
	runtime.LockOSThread() // the tracer is this thread: detach must come from it
	defer runtime.UnlockOSThread()
	stopped := make(chan struct{}, 1)
	exited := make(chan unix.WaitStatus, 1)
	pid, err := r.spawnTraced(func() (int, error) {
		return syscall.ForkExec("/bin/sh", []string{"sh", "-c", "exit 3"},
			&syscall.ProcAttr{Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Ptrace: true}})
	}, func(ws unix.WaitStatus) {
		if ws.Stopped() {
			stopped <- struct{}{}
			return
		}
		exited <- ws
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("the traced child's stop was never reported")
	}
	r.untrace(pid)
	if err := unix.PtraceDetach(pid); err != nil {
		t.Fatal(err)
	}
	select {
	case ws := <-exited:
		if ws.ExitStatus() != 3 {
			t.Errorf("exit status %d, want 3", ws.ExitStatus())
		}
	case <-time.After(time.Minute):
		t.Fatal("the traced child's exit was never reported")
	}
}

// A walk deferred long (a traced child's stop explained the signal) is
// brought forward by a signal that needs one sooner: a program that
// crashes right after its start must be reaped within sweepEvery, not
// when the stop's deferral runs out.
func TestDeferredWalkComesForward(t *testing.T) {
	r := &reaper{sweep: time.NewTimer(time.Hour)}
	r.sweep.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deferWalkLocked(sweepAfterStop)
	r.deferWalkLocked(time.Millisecond)
	if left := time.Until(r.due); left > sweepEvery {
		t.Fatalf("the walk is due in %v after a signal that needs it within 1ms, want at most %v", left, sweepEvery)
	}
	// A later, longer deferral does not push it back.
	r.deferWalkLocked(sweepAfterStop)
	if left := time.Until(r.due); left > sweepEvery {
		t.Fatalf("a longer deferral pushed the walk back to %v from now", left)
	}
}
