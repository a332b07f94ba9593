package reap

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// TestChangedCollectsEveryExitOnce starts real children, lets them exit,
// and checks that one call reaps every one with its status and then
// reports no child left.
func TestChangedCollectsEveryExitOnce(t *testing.T) {
	want := map[int]int{}
	for code := range 3 {
		cmd := exec.Command("/bin/sh", "-c", "exit "+string(rune('0'+code)))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		want[cmd.Process.Pid] = code
	}
	got := map[int]int{}
	for len(got) < len(want) {
		// Block until one has ended (without reaping it), then collect
		// whatever is ready: the test waits without spinning.
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil && err != unix.EINTR {
			t.Fatalf("waitid: %v", err)
		}
		Changed(func(pid int, ws unix.WaitStatus) {
			if !Ended(ws) {
				return
			}
			if _, dup := got[pid]; dup {
				t.Errorf("pid %d reported twice", pid)
			}
			got[pid] = ws.ExitStatus()
		})
	}
	for pid, code := range want {
		if got[pid] != code {
			t.Errorf("pid %d: exit %d, want %d", pid, got[pid], code)
		}
	}
	if left := Changed(func(int, unix.WaitStatus) { t.Error("a change after every child was reaped") }); left {
		t.Error("children left after every child was reaped")
	}
}
