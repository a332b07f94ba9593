package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// blockSignalsExec, as the test binary's first argument, makes it a
// wrapper that blocks SIGUSR1, SIGUSR2, SIGWINCH and SIGALRM and execs the
// rest: a parent that starts supervise with signals blocked. (A Go parent
// cannot otherwise: its children get the mask it was started with.)
const blockSignalsExec = "--block-signals-exec"

func blockSignalsAndExec(argv []string) {
	runtime.LockOSThread()
	var set unix.Sigset_t
	for _, sig := range []unix.Signal{unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGALRM} {
		set.Val[(sig-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
		fmt.Fprintln(os.Stderr, "blocking signals:", err)
		os.Exit(1)
	}
	err := unix.Exec(argv[0], argv, os.Environ())
	fmt.Fprintln(os.Stderr, "exec:", err)
	os.Exit(1)
}

// withSignalsBlocked is the wrapper (startDaemonUnder) that starts its
// command with signals blocked.
func withSignalsBlocked(t *testing.T) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{self, blockSignalsExec}
}

// maskOf is the SigBlk line of pid's /proc status: its blocked signals.
func maskOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "SigBlk:") {
			return line
		}
	}
	t.Fatalf("no SigBlk in /proc/%d/status", pid)
	return ""
}

// A supervise started with signals blocked starts its programs with none
// blocked, as systemd and dumb-init do: a Go program passes the mask it
// was started with to what it forks, so a program under it ignored, say,
// the SIGUSR1 that makes it reopen its logs. (The programs are not shells:
// sh clears its mask itself.)
func TestProgramsStartWithNoSignalBlocked(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "supervise.toml")
	if err := os.WriteFile(file, []byte("[program.p]\ncommand = [\"sleep\", \"600\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemonUnder(t, withSignalsBlocked(t), binary, dir, file)
	var pid int
	eventually(t, "p running", 30*time.Second, func() bool {
		st := d.status()["p"]
		pid = st.Pid
		return st.State == "Running" && pid > 0
	})
	if got := maskOf(t, pid); got != "SigBlk:\t0000000000000000" {
		t.Errorf("the program started with %q, want no signal blocked", got)
	}
}

// The same for `supervise exec`: the command starts with no signal blocked.
func TestInitCommandStartsWithNoSignalBlocked(t *testing.T) {
	for _, m := range initModes {
		t.Run(m.name, func(t *testing.T) {
			argv := append(withSignalsBlocked(t), binary, "exec", "--", "grep", "SigBlk:", "/proc/self/status")
			if m.pid1 {
				argv = append([]string{"unshare", "--pid", "--fork", "--mount-proc"}, argv...)
			}
			m.skip(t)
			r := startInitArgv(t, m, nil, nil, argv...)
			if code, _ := r.wait(30 * time.Second); code != 0 {
				t.Fatalf("supervise exec exited %d:\n%s", code, r.stderr.String())
			}
			if got := strings.TrimSpace(r.stderr.String()); got != "SigBlk:\t0000000000000000" {
				t.Errorf("the command started with %q, want no signal blocked", got)
			}
		})
	}
}
