package pid1

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func needCPUs(t *testing.T) unix.CPUSet {
	t.Helper()
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	if orig.Count() < 2 {
		t.Skip("needs a CPU mask of two CPUs or more: there is nothing to pin to")
	}
	return orig
}

// threadMasks reads the CPU mask of every thread of this process.
func threadMasks(t *testing.T) map[int]unix.CPUSet {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	masks := map[int]unix.CPUSet{}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue
			}
			t.Fatal(err)
		}
		masks[tid] = set
	}
	return masks
}

// TestCPUPin: pinning puts every thread on one CPU of the mask, release
// gives every thread the mask back, and a command forked meanwhile gets
// the original mask, not the pin.
func TestCPUPin(t *testing.T) {
	orig := needCPUs(t)
	p := pinThreads()
	defer p.release()
	if !p.pinned {
		t.Fatal("pinThreads did not pin")
	}
	for tid, set := range threadMasks(t) {
		if set.Count() != 1 || !orig.IsSet(firstCPU(set)) {
			t.Errorf("thread %d: %d CPUs in its mask while pinned, want one of the original mask", tid, set.Count())
		}
	}

	pid, err := p.forkExec("/bin/sleep", []string{"sleep", "60"}, &syscall.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	var child unix.CPUSet
	err = unix.SchedGetaffinity(pid, &child)
	_ = unix.Kill(pid, unix.SIGKILL)
	var ws unix.WaitStatus
	_, _ = unix.Wait4(pid, &ws, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if child != orig {
		t.Errorf("the command forked while pinned has %d CPUs, want the original %d", child.Count(), orig.Count())
	}

	p.release()
	for tid, set := range threadMasks(t) {
		if set != orig {
			t.Errorf("thread %d: %d CPUs in its mask after release, want the original %d", tid, set.Count(), orig.Count())
		}
	}
}

func firstCPU(set unix.CPUSet) int {
	for cpu := range 1024 {
		if set.IsSet(cpu) {
			return cpu
		}
	}
	return -1
}

// TestRunDedicatedHelper is the process of TestRunDedicated: a Dedicated
// Run leaves its signal handlers installed, so it gets a process of its
// own (this test binary again).
func TestRunDedicatedHelper(t *testing.T) {
	if os.Getenv("PID1_TEST_DEDICATED") == "" {
		t.Skip("run by TestRunDedicated")
	}
	code, err := Run(t.Context(), Config{
		Args:      []string{"sh", "-c", `grep Cpus_allowed_list /proc/self/status; exit 5`},
		Dedicated: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	os.Exit(code) // the code is the check
}

// TestRunDedicated: a Dedicated init hands its command the CPU mask it
// was started with (the pin is its own), and exits with the command's
// code.
func TestRunDedicated(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunDedicatedHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "PID1_TEST_DEDICATED=1")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 {
		t.Fatalf("the Dedicated Run: %v, want exit code 5\n%s", err, out)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for l := range strings.SplitSeq(string(status), "\n") {
		if strings.HasPrefix(l, "Cpus_allowed_list:") {
			want = l
		}
	}
	if !strings.Contains(string(out), want+"\n") {
		t.Errorf("the command's mask is not the init's %q:\n%s", want, out)
	}
}
