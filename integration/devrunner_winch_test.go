package integration

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sizeScript prints its terminal's size at its start and on each
// SIGWINCH. stty reads the size of its stdin: the program's terminal
// (fd 4, as fd 1 is a pipe inside $(...)).
const sizeScript = `exec 4>&1
trap 'echo "size $(stty size <&4)"' WINCH
echo "size $(stty size <&4)"
while :; do sleep 0.1 & wait $!; done
`

// runnerOnTerminal is a dev runner whose stdin, stdout and stderr are a
// pseudo-terminal's slave, its controlling terminal.
type runnerOnTerminal struct {
	t      *testing.T
	master *os.File
	out    *syncBuffer
	cmd    *exec.Cmd
}

// startOnTerminal runs exe with args in dir on a terminal of rows x cols.
func startOnTerminal(t *testing.T, dir string, env []string, rows, cols uint16, exe string, args ...string) *runnerOnTerminal {
	t.Helper()
	master, slave := openPty(t)
	r := &runnerOnTerminal{t: t, master: master, out: &syncBuffer{}}
	r.setSize(rows, cols)
	r.cmd = exec.Command(exe, args...)
	r.cmd.Dir, r.cmd.Env = dir, env
	r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = slave, slave, slave
	// Its own session, with the terminal as its controlling one: the
	// foreground group the kernel signals on a resize.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			r.out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	done := make(chan struct{})
	go func() { r.cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			r.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("supervise on a terminal:\n%s", tail(r.out.String(), 40))
		}
	})
	return r
}

// setSize resizes the terminal on its master: the kernel sends SIGWINCH
// to its foreground group, supervise.
func (r *runnerOnTerminal) setSize(rows, cols uint16) {
	r.t.Helper()
	if err := unix.IoctlSetWinsize(int(r.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		r.t.Fatal(err)
	}
}

// waitCount waits until s is n times on the terminal.
func (r *runnerOnTerminal) waitCount(what, s string, n int) {
	r.t.Helper()
	eventually(r.t, what, 60*time.Second, func() bool { return strings.Count(r.out.String(), s) == n })
}

// TestDevRunnerTtyFollowsResize: supervise --tty on a terminal gives each
// program's pseudo-terminal the terminal's size less the line prefix
// ("w | ", four columns), passes a resize of its terminal on (the program
// hears SIGWINCH and sees the new size), and a restarted program starts
// at the size of the moment.
func TestDevRunnerTtyFollowsResize(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"size.sh": sizeScript, "Procfile": "w: exec bash ./size.sh\n"})
	env := append(devEnv(t.TempDir()), "NO_COLOR=1")
	r := startOnTerminal(t, dir, env, 30, 100, binary, "--tty")
	r.waitCount("the program at the terminal's size less the prefix", "w | size 30 96", 1)
	r.setSize(40, 150)
	r.waitCount("the program told of the resize", "w | size 40 146", 1)
	r.setSize(50, 120)
	r.waitCount("the program told of the second resize", "w | size 50 116", 1)
	if o, e, code := devCtl(t, dir, env, "restart", "w"); code != 0 {
		t.Fatalf("restart: exit %d: %s%s", code, o, e)
	}
	r.waitCount("the restarted program at the size of now", "w | size 50 116", 2)
}

// TestDevRunnerTtyResizeAfterUpgrade: after an upgrade in place the new
// binary goes on passing resizes on to the programs it took over, whose
// terminals kept their size through the exec.
func TestDevRunnerTtyResizeAfterUpgrade(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"size.sh": sizeScript, "Procfile": "w: exec bash ./size.sh\nlonger: exec bash ./size.sh\n"})
	exe := installV1(t, dir)
	env := append(devEnv(t.TempDir()), "NO_COLOR=1")
	r := startOnTerminal(t, dir, env, 30, 100, exe, "--tty")
	// The prefix is as wide as the longest name: "w      | ".
	r.waitCount("w at its size", "w      | size 30 91", 1)
	r.waitCount("longer at its size", "longer | size 30 91", 1)
	var before map[string]int
	eventually(t, "both programs running", 60*time.Second, func() bool {
		before = devPids(t, dir, env)
		return len(before) == 2
	})
	installBinary(t, upgradeBuild(t, "v2"), exe, 0o755)
	if o, e, code := devCtl(t, dir, env, "upgrade"); code != 0 {
		t.Fatalf("upgrade: exit %d: %s%s", code, o, e)
	}
	if got := devPids(t, dir, env); !mapsEqual(got, before) {
		t.Fatalf("the upgrade changed the pids:\nbefore %v\nafter  %v", before, got)
	}
	r.setSize(45, 140)
	r.waitCount("w told of the resize after the upgrade", "w      | size 45 131", 1)
	r.waitCount("longer told of the resize after the upgrade", "longer | size 45 131", 1)
	// The terminals kept their size through the exec: no program was
	// told of a change before this one.
	if n := strings.Count(r.out.String(), "| size "); n != 4 {
		t.Errorf("%d size lines, want 4 (two at the start, two after the resize)", n)
	}
}
