package integration

import (
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

// `supervise exec` is tested two ways: truly PID 1 of a new pid namespace
// (unshare --pid --fork --mount-proc, root only), and not PID 1, where it
// makes itself a child subreaper. Every behaviour test runs in both.

type initMode struct {
	name string
	pid1 bool
}

var initModes = []initMode{{"pid1", true}, {"subreaper", false}}

func (m initMode) skip(t *testing.T) {
	t.Helper()
	if !m.pid1 {
		return
	}
	needRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux) to make supervise PID 1 of a new pid namespace")
	}
}

// initRun is one `supervise exec` under test.
type initRun struct {
	t      *testing.T
	mode   initMode
	cmd    *exec.Cmd
	stderr *syncBuffer
	start  time.Time
	end    time.Time
	done   chan struct{}
	err    error
}

// startInit runs `supervise exec ARGS…`, as PID 1 through unshare or
// directly. stdio, when given, is the init's stdin, stdout and stderr;
// sys its SysProcAttr (default: its own process group).
func startInit(t *testing.T, m initMode, stdio *os.File, sys *syscall.SysProcAttr, args ...string) *initRun {
	t.Helper()
	m.skip(t)
	argv := append([]string{binary, "exec"}, args...)
	if m.pid1 {
		argv = append([]string{"unshare", "--pid", "--fork", "--mount-proc"}, argv...)
	}
	return startInitArgv(t, m, stdio, sys, argv...)
}

func startInitArgv(t *testing.T, m initMode, stdio *os.File, sys *syscall.SysProcAttr, argv ...string) *initRun {
	t.Helper()
	return startInitExtra(t, m, stdio, nil, sys, argv...)
}

// startInitExtra is startInitArgv with extra descriptors from 3 up.
func startInitExtra(t *testing.T, m initMode, stdio *os.File, extra []*os.File, sys *syscall.SysProcAttr, argv ...string) *initRun {
	t.Helper()
	r := &initRun{t: t, mode: m, stderr: &syncBuffer{}, done: make(chan struct{})}
	r.cmd = exec.Command(argv[0], argv[1:]...)
	r.cmd.ExtraFiles = extra
	if stdio != nil {
		r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = stdio, stdio, stdio
	} else {
		r.cmd.Stdout, r.cmd.Stderr = r.stderr, r.stderr
	}
	if sys == nil {
		sys = &syscall.SysProcAttr{Setpgid: true}
	}
	r.cmd.SysProcAttr = sys
	r.start = time.Now()
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		r.end = time.Now()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
			return
		default:
		}
		// A failed test: kill the init and everything below it (its
		// command has its own process group, so a group kill misses it).
		pids := append(descendantsOf(r.cmd.Process.Pid), r.cmd.Process.Pid)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		<-r.done
		t.Logf("supervise exec output:\n%s", tail(r.stderr.String(), 40))
	})
	return r
}

// initPid is the host pid of the init: unshare's only child in pid1 mode.
func (r *initRun) initPid() int {
	r.t.Helper()
	if !r.mode.pid1 {
		return r.cmd.Process.Pid
	}
	var pid int
	eventually(r.t, "the init under unshare", 30*time.Second, func() bool {
		kids := childPids(r.cmd.Process.Pid)
		if len(kids) == 1 {
			pid = kids[0]
		}
		return pid != 0
	})
	return pid
}

func (r *initRun) signal(sig syscall.Signal) {
	r.t.Helper()
	if err := syscall.Kill(r.initPid(), sig); err != nil {
		r.t.Fatalf("signalling the init: %v", err)
	}
}

// wait returns the init's exit code and how long it ran.
func (r *initRun) wait(timeout time.Duration) (int, time.Duration) {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(timeout):
		r.t.Fatalf("supervise exec did not exit within %v\n%s", timeout, tail(r.stderr.String(), 40))
	}
	var ee *exec.ExitError
	switch {
	case errors.As(r.err, &ee):
		return ee.ExitCode(), r.end.Sub(r.start)
	case r.err != nil:
		r.t.Fatalf("supervise exec: %v", r.err)
	}
	return 0, r.end.Sub(r.start)
}

// lineCount counts the lines of file equal to want.
func lineCount(t *testing.T, file, want string) int {
	n := 0
	for _, l := range readLines(t, file) {
		if l == want {
			n++
		}
	}
	return n
}

func waitLine(t *testing.T, file, want string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%q in %s", want, filepath.Base(file)), 30*time.Second, func() bool {
		return lineCount(t, file, want) > 0
	})
}

// TestExecReapsOrphans: 200 orphaned grandchildren that exit are reaped
// while the command runs, and the command's own status is not stolen.
func TestExecReapsOrphans(t *testing.T) {
	for _, m := range initModes {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			script := fmt.Sprintf(`
for i in $(seq 200); do (sleep 0.05 &); done
: > %[1]s/spawned
while [ ! -e %[1]s/release ]; do sleep 0.05; done
exit 7`, dir)
			r := startInit(t, m, nil, nil, "-v", "--", "sh", "-c", script)
			init := r.initPid()
			eventually(t, "200 orphans spawned", 120*time.Second, func() bool {
				_, err := os.Stat(filepath.Join(dir, "spawned"))
				return err == nil
			})
			// Every orphan came to the init; once they exited it must
			// have reaped them all: its only child left is the command.
			var kids []int
			eventually(t, "the init's only child to be the command", 30*time.Second, func() bool {
				kids = childPids(init)
				return len(kids) == 1
			})
			if st, comm := procState(kids[0]); st == 'Z' || comm != "sh" {
				t.Fatalf("the init's child is %q in state %c, want sh running", comm, st)
			}
			if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			code, _ := r.wait(60 * time.Second)
			if code != 7 {
				t.Errorf("exit code %d, want 7\n%s", code, r.stderr)
			}
			if !strings.Contains(r.stderr.String(), "orphans_reaped=200") {
				t.Errorf("the init did not report 200 orphans reaped:\n%s", tail(r.stderr.String(), 10))
			}
		})
	}
}

func TestExecExitCodes(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		args    []string
		code    int
		message string // the one line on stderr, "" for none
	}{
		{"exit 7", []string{"--", "sh", "-c", "exit 7"}, 7, ""},
		{"killed by SIGKILL", []string{"--", "sh", "-c", "kill -KILL $$"}, 137, ""},
		{"killed by SIGTERM", []string{"--", "sh", "-c", "kill -TERM $$"}, 143, ""},
		{"success exit code", []string{"-e", "7", "--", "sh", "-c", "exit 7"}, 0, ""},
		{"success exit code for a signal", []string{"--success-exit-code", "143", "--", "sh", "-c", "kill -TERM $$"}, 0, ""},
		{"not found", []string{"--", "supervise-no-such-command"}, 127, `supervise: exec "supervise-no-such-command": executable file not found in $PATH`},
		{"no such path", []string{"--", "/nonexistent/cmd"}, 127, `supervise: exec "/nonexistent/cmd": no such file or directory`},
		{"not executable", []string{"--", notExec}, 126, fmt.Sprintf("supervise: exec %q: permission denied", notExec)},
		{"a directory", []string{"--", "/"}, 126, `supervise: exec "/": is a directory`},
	}
	for _, m := range initModes {
		t.Run(m.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					r := startInit(t, m, nil, nil, c.args...)
					code, _ := r.wait(60 * time.Second)
					if code != c.code {
						t.Errorf("exit code %d, want %d\n%s", code, c.code, r.stderr)
					}
					out := strings.TrimSpace(r.stderr.String())
					if out != c.message {
						t.Errorf("stderr %q, want %q", out, c.message)
					}
				})
			}
		})
	}
}

// signalScript records every listed signal the command and a grandchild in
// its process group get, in log as "child SIG" / "grandchild SIG". The
// grandchild runs in the background, where a non-interactive shell starts
// with SIGINT and SIGQUIT ignored (and then cannot trap them): env puts
// them back to default first.
func signalScript(dir string) string {
	return fmt.Sprintf(`
export F=%[1]s/log
for s in TERM INT HUP USR1 USR2 WINCH QUIT; do trap "echo child $s >> $F" $s; done
env --default-signal=INT,QUIT sh -c '
	for s in TERM INT HUP USR1 USR2 WINCH QUIT; do trap "echo grandchild $s >> $F" $s; done
	echo grandchild $$ >> $F
	echo grandchild ready >> $F
	while [ ! -e %[1]s/stop ]; do sleep 0.05 & wait $!; done' &
echo child ready >> $F
while [ ! -e %[1]s/stop ]; do sleep 0.05 & wait $!; done
wait
exit 5`, dir)
}

// stopScript has signalScript's command in dir exit (code 5) and checks
// that the init exits with its code.
func (r *initRun) stopScript(dir string) {
	r.t.Helper()
	must(r.t, writeFileNow(filepath.Join(dir, "stop")))
	if code, _ := r.wait(60 * time.Second); code != 5 {
		r.t.Errorf("exit code %d, want 5\n%s", code, r.stderr)
	}
}

// usr1ThenStop: under signalScript(dir), a SIGUSR1 to the init reaches
// the command and its child (the command's process group); then the
// script is told to stop and must exit 5.
func (r *initRun) usr1ThenStop(dir string) {
	r.t.Helper()
	log := filepath.Join(dir, "log")
	r.signal(syscall.SIGUSR1)
	waitLine(r.t, log, "child USR1")
	waitLine(r.t, log, "grandchild USR1")
	r.stopScript(dir)
}

func grandchildPid(t *testing.T, log string) int {
	for _, l := range readLines(t, log) {
		if n, ok := strings.CutPrefix(l, "grandchild "); ok {
			if pid, err := strconv.Atoi(n); err == nil {
				return pid
			}
		}
	}
	t.Fatal("no grandchild pid in the log")
	return 0
}

func TestExecForwardsSignalsToTheGroup(t *testing.T) {
	sigs := []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}
	for _, m := range initModes {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "log")
			r := startInit(t, m, nil, nil, "--", "sh", "-c", signalScript(dir))
			waitLine(t, log, "child ready")
			waitLine(t, log, "grandchild ready")
			for _, sig := range sigs {
				name := unix.SignalName(sig)[3:]
				r.signal(sig)
				waitLine(t, log, "child "+name)
				waitLine(t, log, "grandchild "+name)
			}
			for _, sig := range sigs {
				name := unix.SignalName(sig)[3:]
				if n := lineCount(t, log, "child "+name); n != 1 {
					t.Errorf("the child got %s %d times, want once", name, n)
				}
			}
			r.stopScript(dir)
		})
	}
}

func TestExecSingleChild(t *testing.T) {
	for _, m := range initModes {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "log")
			r := startInit(t, m, nil, nil, "--single-child", "--", "sh", "-c", signalScript(dir))
			waitLine(t, log, "child ready")
			waitLine(t, log, "grandchild ready")
			gc := grandchildPid(t, log)
			if m.pid1 {
				gc = hostPidOf(t, r.initPid(), "sh", gc)
			}
			r.signal(syscall.SIGUSR1)
			waitLine(t, log, "child USR1")
			// Had the group been signalled, USR1 would be pending at the
			// grandchild before this USR2 (and a shell runs pending traps
			// lowest signal first): its USR2 line proves USR1 never came.
			if err := syscall.Kill(gc, syscall.SIGUSR2); err != nil {
				t.Fatal(err)
			}
			waitLine(t, log, "grandchild USR2")
			if n := lineCount(t, log, "grandchild USR1"); n != 0 {
				t.Errorf("--single-child: the grandchild got USR1 %d times", n)
			}
			r.stopScript(dir)
		})
	}
}

// hostPidOf finds the host pid of the process that is nsPid inside the
// init's pid namespace (NSpid in its status), below the init.
func hostPidOf(t *testing.T, init int, comm string, nsPid int) int {
	t.Helper()
	for _, pid := range descendantsOf(init) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for l := range strings.SplitSeq(string(b), "\n") {
			if f, ok := strings.CutPrefix(l, "NSpid:"); ok {
				ids := strings.Fields(f)
				if len(ids) > 1 && ids[len(ids)-1] == strconv.Itoa(nsPid) {
					return pid
				}
			}
		}
	}
	t.Fatalf("no %s with pid %d in the init's namespace", comm, nsPid)
	return 0
}

func TestExecRewrite(t *testing.T) {
	for _, m := range initModes {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "log")
			r := startInit(t, m, nil, nil, "--rewrite", "TERM:QUIT", "--rewrite", "HUP:0", "--", "sh", "-c", signalScript(dir))
			waitLine(t, log, "child ready")
			waitLine(t, log, "grandchild ready")
			r.signal(syscall.SIGTERM)
			waitLine(t, log, "child QUIT")
			waitLine(t, log, "grandchild QUIT")
			r.signal(syscall.SIGHUP) // dropped
			r.signal(syscall.SIGUSR1)
			// The init forwards in the order it received: USR1 arriving
			// means TERM and HUP were dealt with before it.
			waitLine(t, log, "child USR1")
			for _, l := range []string{"child TERM", "grandchild TERM", "child HUP", "grandchild HUP"} {
				if n := lineCount(t, log, l); n != 0 {
					t.Errorf("%q appeared %d times: the rewrite did not apply", l, n)
				}
			}
			r.stopScript(dir)
		})
	}
}

// TestExecLingeringGroup: after the command exits, what it left gets the
// stop signal; what ignores it is killed once the grace is over, and what
// obeys it lets the init exit at once.
func TestExecLingeringGroup(t *testing.T) {
	for _, m := range initModes {
		t.Run(m.name+"/ignores TERM", func(t *testing.T) {
			dir := t.TempDir()
			gpid := filepath.Join(dir, "gpid")
			script := fmt.Sprintf(`
sh -c 'trap "" TERM; echo $$ > %[1]s; exec sleep 1000' &
while [ ! -s %[1]s ]; do sleep 0.01; done
exit 3`, gpid)
			const grace = 1500 * time.Millisecond
			r := startInit(t, m, nil, nil, "--grace", grace.String(), "--", "sh", "-c", script)
			code, took := r.wait(60 * time.Second)
			if code != 3 {
				t.Errorf("exit code %d, want 3\n%s", code, r.stderr)
			}
			if took < grace {
				t.Errorf("exited after %v, before the %v grace was over", took, grace)
			}
			if !strings.Contains(r.stderr.String(), "grace period over: killed what the command left") {
				t.Errorf("no kill after the grace reported:\n%s", r.stderr)
			}
			if !m.pid1 {
				// Not PID 1, nothing kills the namespace on our exit: the
				// init itself must have killed and reaped the grandchild.
				pid, err := strconv.Atoi(strings.TrimSpace(readLines(t, gpid)[0]))
				if err != nil {
					t.Fatal(err)
				}
				if st, _ := procState(pid); st != 0 {
					t.Errorf("the TERM-ignoring grandchild %d is still there (state %c)", pid, st)
				}
			}
		})
		t.Run(m.name+"/exits on TERM", func(t *testing.T) {
			dir := t.TempDir()
			gpid := filepath.Join(dir, "gpid")
			script := fmt.Sprintf(`
sh -c 'echo $$ > %[1]s; exec sleep 1000' &
while [ ! -s %[1]s ]; do sleep 0.01; done
exit 3`, gpid)
			r := startInit(t, m, nil, nil, "--grace", "120s", "--", "sh", "-c", script)
			code, took := r.wait(60 * time.Second)
			if code != 3 {
				t.Errorf("exit code %d, want 3\n%s", code, r.stderr)
			}
			// A fixed sleep of the grace would take 120s; the bound is
			// what a loaded machine needs to start a few shells.
			if took > 20*time.Second {
				t.Errorf("exited after %v: it waited for the grace instead of the last exit", took)
			}
			if strings.Contains(r.stderr.String(), "grace period over") {
				t.Errorf("the grace ran out:\n%s", r.stderr)
			}
			if !m.pid1 {
				pid, err := strconv.Atoi(strings.TrimSpace(readLines(t, gpid)[0]))
				if err != nil {
					t.Fatal(err)
				}
				if st, _ := procState(pid); st != 0 {
					t.Errorf("the grandchild %d is still there (state %c)", pid, st)
				}
			}
		})
	}
}

// TestExecSetsidEscapee: a descendant that left the command's process group
// (setsid) is still stopped, and waited for, when the command exits.
func TestExecSetsidEscapee(t *testing.T) {
	for _, m := range initModes {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			gpid := filepath.Join(dir, "gpid")
			script := fmt.Sprintf(`
setsid sh -c 'echo $$ > %[1]s; exec sleep 1000' &
while [ ! -s %[1]s ]; do sleep 0.01; done
exit 4`, gpid)
			r := startInit(t, m, nil, nil, "--grace", "120s", "--", "sh", "-c", script)
			code, took := r.wait(60 * time.Second)
			if code != 4 || took > 20*time.Second {
				t.Errorf("exit code %d after %v, want 4 at once\n%s", code, took, r.stderr)
			}
			if !m.pid1 {
				pid, _ := strconv.Atoi(strings.TrimSpace(readLines(t, gpid)[0]))
				if st, _ := procState(pid); pid == 0 || st != 0 {
					t.Errorf("the setsid'd grandchild %d survived (state %c)", pid, st)
				}
			}
		})
	}
}

func TestExecRestartWithBackoff(t *testing.T) {
	m := initModes[1] // the policy does not depend on being PID 1
	t.Run("on-failure until success", func(t *testing.T) {
		dir := t.TempDir()
		runs := filepath.Join(dir, "runs")
		script := fmt.Sprintf(`echo run >> %[1]s; [ $(wc -l < %[1]s) -ge 3 ] && exit 0; exit 1`, runs)
		r := startInit(t, m, nil, nil, "--restart", "on-failure", "--backoff-initial", "300ms", "--", "sh", "-c", script)
		code, took := r.wait(60 * time.Second)
		if code != 0 {
			t.Errorf("exit code %d, want 0\n%s", code, r.stderr)
		}
		if n := len(readLines(t, runs)); n != 3 {
			t.Errorf("%d runs, want 3", n)
		}
		// The kubelet curve: the first restart at once, the second after
		// the initial delay.
		if took < 300*time.Millisecond {
			t.Errorf("three runs took %v: the 300ms backoff was not waited out", took)
		}
	})
	// The command dies of a TERM at once: however soon its exit comes
	// after the TERM, the TERM was a stop request and no restart follows.
	t.Run("TERM to the running command", func(t *testing.T) {
		for i := range 10 {
			dir := t.TempDir()
			runs := filepath.Join(dir, "runs")
			r := startInit(t, m, nil, nil, "--restart", "always", "--", "sh", "-c", fmt.Sprintf("echo run >> %s; exec sleep 1000", runs))
			eventually(t, "the first run", 30*time.Second, func() bool { return len(readLines(t, runs)) >= 1 })
			r.signal(syscall.SIGTERM)
			if code, _ := r.wait(30 * time.Second); code != 128+int(syscall.SIGTERM) {
				t.Fatalf("try %d: exit code %d, want 143\n%s", i, code, r.stderr)
			}
			if n := len(readLines(t, runs)); n != 1 {
				t.Fatalf("try %d: %d runs, want 1: the TERM was taken for a crash", i, n)
			}
		}
	})
	t.Run("TERM during the backoff", func(t *testing.T) {
		dir := t.TempDir()
		runs := filepath.Join(dir, "runs")
		r := startInit(t, m, nil, nil, "--restart", "always", "--backoff-initial", "1h", "--", "sh", "-c", fmt.Sprintf("echo run >> %s; exit 6", runs))
		eventually(t, "the second run", 30*time.Second, func() bool { return len(readLines(t, runs)) >= 2 })
		r.signal(syscall.SIGTERM)
		code, _ := r.wait(30 * time.Second)
		if code != 6 {
			t.Errorf("exit code %d, want the last run's 6\n%s", code, r.stderr)
		}
		if n := len(readLines(t, runs)); n != 2 {
			t.Errorf("%d runs, want 2 (at once, then a 1h backoff cut short)", n)
		}
	})
}

// openPty returns a pseudo-terminal's master and slave.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestExecTerminal: with a controlling terminal, the command's group is
// the terminal's foreground (in a new session when the init led its own),
// so Ctrl-C reaches it from the terminal, not through the init (which
// drops a forwarded INT here: --rewrite INT:0).
func TestExecTerminal(t *testing.T) {
	script := `
read pid comm state ppid pgrp sess tty tpgid rest < /proc/$$/stat
echo "stat $pid $pgrp $sess $tty $tpgid"
trap 'echo got INT; exit 42' INT
echo ready
while :; do sleep 0.05 & wait $!; done`
	cases := []struct {
		name       string
		mode       initMode
		newSession bool // the command must lead a session of its own
		argv       func() []string
	}{
		// The init leads the terminal's session, as in `docker run -it`.
		{"subreaper/session leader", initModes[1], true, func() []string {
			return []string{binary, "exec", "--rewrite", "INT:0", "--", "sh", "-c", script}
		}},
		{"pid1/session leader", initModes[0], true, func() []string {
			return []string{"unshare", "--pid", "--fork", "--mount-proc", "setsid", "-c", binary, "exec", "--rewrite", "INT:0", "--", "sh", "-c", script}
		}},
		// The init is a foreground job of a shell's session.
		{"subreaper/foreground job", initModes[1], false, func() []string {
			return []string{"sh", "-c", `"$0" exec --rewrite INT:0 -- sh -c "$1"; echo "rc=$?"`, binary, script}
		}},
		{"pid1/foreground job", initModes[0], false, func() []string {
			return []string{"unshare", "--pid", "--fork", "--mount-proc", binary, "exec", "--rewrite", "INT:0", "--", "sh", "-c", script}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.mode.skip(t)
			master, slave := openPty(t)
			out := &syncBuffer{}
			copied := make(chan struct{})
			go func() {
				defer close(copied)
				buf := make([]byte, 4096)
				for {
					n, err := master.Read(buf)
					out.Write(buf[:n])
					if err != nil {
						return
					}
				}
			}()
			r := startInitArgv(t, c.mode, slave, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}, c.argv()...)
			eventually(t, "the command to be ready", 30*time.Second, func() bool { return strings.Contains(out.String(), "ready") })
			var pid, pgrp, sess, tty, tpgid int
			for l := range strings.SplitSeq(out.String(), "\n") {
				if strings.HasPrefix(l, "stat ") {
					fmt.Sscan(strings.TrimPrefix(l, "stat "), &pid, &pgrp, &sess, &tty, &tpgid)
				}
			}
			if pid == 0 || pgrp != pid || tty == 0 || tpgid != pgrp {
				t.Errorf("command pid %d pgrp %d tty %#x foreground %d: want its own group, with the terminal, in the foreground\n%s", pid, pgrp, tty, tpgid, out)
			}
			if c.newSession && sess != pid {
				t.Errorf("command pid %d in session %d, want a session of its own", pid, sess)
			}
			if _, err := master.Write([]byte{3}); err != nil { // ^C
				t.Fatal(err)
			}
			code, _ := r.wait(60 * time.Second)
			// The command's last line may still be in the terminal's
			// buffer when the init has exited: wait for the copy.
			eventually(t, "Ctrl-C to reach the command (its \"got INT\")", 30*time.Second, func() bool {
				return strings.Contains(out.String(), "got INT")
			})
			want := 42
			if !c.newSession && !c.mode.pid1 {
				want = 0 // the shell around it reports
				eventually(t, "the shell's report", 10*time.Second, func() bool { return strings.Contains(out.String(), "rc=42") })
			}
			if code != want {
				t.Errorf("exit code %d, want %d\n%s", code, want, out)
			}
			slave.Close()
			<-copied
		})
	}
}

// TestExecWithoutTerminal: without a terminal to hand over, the command
// gets a process group of its own; a new session only when the init has
// a controlling terminal, so that the command is cut off from it (as it
// was from a shell's terminal it was not given). Signals to the init
// reach the whole group either way.
func TestExecWithoutTerminal(t *testing.T) {
	cases := []struct {
		name       string
		terminal   bool // the init has a controlling terminal (not its stdin)
		newSession bool // the command must lead a session of its own
	}{
		{"no terminal", false, false},
		{"terminal not handed over", true, true},
	}
	for _, c := range cases {
		for _, m := range initModes {
			t.Run(c.name+"/"+m.name, func(t *testing.T) {
				m.skip(t)
				dir := t.TempDir()
				log := filepath.Join(dir, "log")
				script := `read pid comm state ppid pgrp sess tty rest < /proc/$$/stat
echo "stat $pid $pgrp $sess $tty" >> ` + log + `
` + signalScript(dir)
				argv := []string{binary, "exec", "--", "sh", "-c", script}
				if m.pid1 {
					argv = append([]string{"unshare", "--pid", "--fork", "--mount-proc"}, argv...)
				}
				// The init leads a session of its own, with no terminal,
				// or with a pseudo-terminal as its controlling terminal
				// on descriptor 3 (closed for the command).
				sys := &syscall.SysProcAttr{Setsid: true}
				var extra []*os.File
				if c.terminal {
					_, slave := openPty(t)
					extra = []*os.File{slave}
					sys = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
				}
				r := startInitExtra(t, m, nil, extra, sys, argv...)
				waitLine(t, log, "child ready")
				waitLine(t, log, "grandchild ready")
				var pid, pgrp, sess, tty int
				for _, l := range readLines(t, log) {
					if f, ok := strings.CutPrefix(l, "stat "); ok {
						fmt.Sscan(f, &pid, &pgrp, &sess, &tty)
					}
				}
				if pid == 0 || pgrp != pid || tty != 0 {
					t.Errorf("command pid %d pgrp %d tty %#x: want a group of its own, no terminal", pid, pgrp, tty)
				}
				if c.newSession && sess != pid {
					t.Errorf("command pid %d in session %d, want a session of its own", pid, sess)
				}
				if !c.newSession && sess == pid {
					t.Errorf("command pid %d leads session %d, want the init's session (a new one costs every start)", pid, sess)
				}
				r.usr1ThenStop(dir)
			})
		}
	}
}

// TestExecSandbox: the sandbox flags put the command in a cgroup (and
// namespaces), with the same exit codes and signal forwarding through the
// init that runs inside.
func TestExecSandbox(t *testing.T) {
	needRoot(t)
	m := initModes[1]
	t.Run("limits and exit code", func(t *testing.T) {
		script := `
p=$(grep -E ':memory:|^0::' /proc/self/cgroup | head -1 | cut -d: -f3)
for f in /sys/fs/cgroup/memory$p/memory.limit_in_bytes /sys/fs/cgroup$p/memory.max /sys/fs/cgroup/unified$p/memory.max; do
	[ -r $f ] && { echo "limit $(cat $f)"; break; }
done
exit 7`
		r := startInit(t, m, nil, nil, "--memory-max", "64MiB", "--pids-max", "32", "--", "sh", "-c", script)
		code, _ := r.wait(60 * time.Second)
		if code != 7 {
			t.Errorf("exit code %d, want 7\n%s", code, r.stderr)
		}
		if !strings.Contains(r.stderr.String(), "limit 67108864") {
			t.Errorf("the command's cgroup has no 64MiB limit:\n%s", r.stderr)
		}
	})
	t.Run("not found", func(t *testing.T) {
		r := startInit(t, m, nil, nil, "--pids-max", "32", "--", "supervise-no-such-command")
		if code, _ := r.wait(60 * time.Second); code != 127 {
			t.Errorf("exit code %d, want 127\n%s", code, r.stderr)
		}
		if !strings.Contains(r.stderr.String(), `exec "supervise-no-such-command": executable file not found in $PATH`) {
			t.Errorf("stderr: %s", r.stderr)
		}
	})
	t.Run("pid namespace and TERM", func(t *testing.T) {
		dir := t.TempDir()
		log := filepath.Join(dir, "log")
		script := fmt.Sprintf(`trap 'echo TERM >> %[1]s; exit 11' TERM; echo "pid $$" >> %[1]s; while :; do sleep 0.05 & wait $!; done`, log)
		r := startInit(t, m, nil, nil, "--ns", "pid,mount", "--", "sh", "-c", script)
		eventually(t, "the command's pid", 30*time.Second, func() bool { return len(readLines(t, log)) > 0 })
		var pid int
		fmt.Sscanf(readLines(t, log)[0], "pid %d", &pid)
		if pid <= 0 || pid > 50 {
			t.Errorf("the command is pid %d: not in a new pid namespace", pid)
		}
		r.signal(syscall.SIGTERM)
		if code, _ := r.wait(60 * time.Second); code != 11 {
			t.Errorf("exit code %d, want 11\n%s", code, r.stderr)
		}
		if !slices.Contains(readLines(t, log), "TERM") {
			t.Error("TERM did not reach the command")
		}
	})
}
