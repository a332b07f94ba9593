package integration

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDevRunnerTtyFollowsResize: supervise --tty on a terminal gives each
// program's pseudo-terminal the terminal's size less the line prefix
// ("w | ", four columns), passes a resize of its terminal on (the program
// hears SIGWINCH and sees the new size), and a restarted program starts
// at the size of the moment.
func TestDevRunnerTtyFollowsResize(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		// stty reads the size of its stdin: the program's terminal (fd 4,
		// as fd 1 is a pipe inside $(...)).
		"size.sh": `exec 4>&1
trap 'echo "size $(stty size <&4)"' WINCH
echo "size $(stty size <&4)"
while :; do sleep 0.1 & wait $!; done
`,
		"Procfile": "w: exec bash ./size.sh\n",
	})
	master, slave := openPty(t)
	setSize := func(rows, cols uint16) {
		t.Helper()
		// On the master: the kernel sends SIGWINCH to the terminal's
		// foreground group, supervise.
		if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
			t.Fatal(err)
		}
	}
	setSize(30, 100)
	env := append(devEnv(t.TempDir()), "NO_COLOR=1")
	cmd := exec.Command(binary, "--tty")
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// Its own session, with the terminal as its controlling one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	out := &syncBuffer{}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("supervise --tty on a terminal:\n%s", tail(out.String(), 40))
		}
	})
	count := func(s string) int { return strings.Count(out.String(), s) }
	eventually(t, "the program at the terminal's size less the prefix", 60*time.Second, func() bool {
		return count("w | size 30 96") == 1
	})
	setSize(40, 150)
	eventually(t, "the program told of the resize", 60*time.Second, func() bool {
		return count("w | size 40 146") == 1
	})
	setSize(50, 120)
	eventually(t, "the program told of the second resize", 60*time.Second, func() bool {
		return count("w | size 50 116") == 1
	})
	if o, e, code := devCtl(t, dir, env, "restart", "w"); code != 0 {
		t.Fatalf("restart: exit %d: %s%s", code, o, e)
	}
	eventually(t, "the restarted program at the size of now", 60*time.Second, func() bool {
		return count("w | size 50 116") == 2
	})
}
