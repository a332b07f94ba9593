package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// binaryResidency reads, in KiB, the size of pid's mappings of its binary
// that are read-only (its code and read-only data) and how much of them
// is resident.
func binaryResidency(t *testing.T, pid int) (resident, size int) {
	t.Helper()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		t.Fatal(err)
	}
	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Fatal(err)
	}
	ours := false
	for _, l := range strings.Split(string(smaps), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4: // a mapping's first line
			ours = len(f) >= 6 && f[5] == exe && !strings.Contains(f[1], "w")
			if ours {
				lo, hi, _ := strings.Cut(f[0], "-")
				a, _ := strconv.ParseUint(lo, 16, 64)
				b, _ := strconv.ParseUint(hi, 16, 64)
				size += int(b-a) / 1024
			}
		case ours && len(f) == 3 && f[0] == "Rss:":
			n, _ := strconv.Atoi(f[1])
			resident += n
		}
	}
	return resident, size
}

// childCount counts pid's children, whichever of its threads forked them.
func childCount(t *testing.T, pid int) int {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		n += len(strings.Fields(string(b)))
	}
	return n
}

// sleepers is the config of n programs that sleep, with no console copy.
func sleepers(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "[program.p%d]\ncommand = [\"sleep\", \"1000\"]\nstdout = { console = false }\n", i)
	}
	return b.String()
}

// waitStartupRelease waits until pid runs n programs and keeps less than
// half of its binary's read-only mappings resident, and returns the
// resident and the mapped KiB. It is watched from outside: a status call
// would map what it runs.
func waitStartupRelease(t *testing.T, pid, n int) (rss, ro int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rss, ro = binaryResidency(t, pid)
		if childCount(t, pid) == n && ro > 0 && rss < ro/2 {
			return rss, ro
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s, %d programs, and %d KiB of the binary's %d KiB read-only mappings resident; want less than half", childCount(t, pid), rss, ro)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Once every program is up, supervise run keeps resident only the part of
// its binary it goes on using: the pages its start-up touched (the CLI,
// the config's decoding, every package's initialisation) are unmapped.
func TestRunReleasesItsStartupPages(t *testing.T) {
	dir, file := writeConfig(t, sleepers(5))
	d := startDaemon(t, dir, file)
	rss, ro := waitStartupRelease(t, d.cmd.Process.Pid, 5)
	t.Logf("resident: %d KiB of the binary's %d KiB read-only", rss, ro)
}

// What serving requests mapped back is given back again once the
// control socket has been quiet for a few seconds: the release re-arms.
func TestRunReleasesWhatRequestsMappedOnceQuiet(t *testing.T) {
	dir, file := writeConfig(t, sleepers(5))
	d := startDaemon(t, dir, file)
	pid := d.cmd.Process.Pid
	rss, ro := waitStartupRelease(t, pid, 5)
	t.Logf("after start-up: %d KiB of the binary's %d KiB read-only resident", rss, ro)
	for range 10 {
		if _, code := d.ctl("status", "--json"); code != 0 {
			t.Fatalf("status exited %d", code)
		}
	}
	served, _ := binaryResidency(t, pid)
	t.Logf("after 10 status calls: %d KiB resident", served)
	deadline := time.Now().Add(60 * time.Second)
	for {
		rss, _ := binaryResidency(t, pid)
		if rss < served/2 {
			t.Logf("once quiet: %d KiB resident", rss)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("60 s after the status calls, %d KiB of the binary resident, %d KiB right after them; want less than half", rss, served)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A position-independent build has data the dynamic loader relocated and
// then made read-only (RELRO): private copies of the binary's pages, not
// the file's. Giving those back would bring the file's unrelocated bytes
// in their place. Such a build answers requests after the start-up's
// release and after the idle one.
func TestRunReleasesOnlyTheFilesPagesOfAPositionIndependentBuild(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "supervise")
	build := exec.Command("go", "build", "-buildmode=pie", "-o", exe, "../cmd/supervise")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building supervise -buildmode=pie: %v\n%s", err, out)
	}
	dir, file := writeConfig(t, sleepers(1))
	d := startDaemonBinary(t, exe, dir, file)
	pid := d.cmd.Process.Pid
	waitStartupRelease(t, pid, 1)
	status := func(when string) {
		t.Helper()
		if out, code := d.ctl("status"); code != 0 {
			t.Fatalf("%s: status exited %d: %s", when, code, out)
		}
	}
	status("after the start-up's release")
	served, _ := binaryResidency(t, pid)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if rss, _ := binaryResidency(t, pid); rss < served {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("60 s after a status call, the idle release has not run")
		}
		time.Sleep(100 * time.Millisecond)
	}
	status("after the idle release")
}
