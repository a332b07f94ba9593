package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The signals the Go runtime uses itself (SIGPIPE, SIGURG for preemption,
// SIGPROF for profiling) reach the command like any other, as with tini
// and dumb-init.

// runtimeSignals are the three, by their trap names.
var runtimeSignals = []syscall.Signal{syscall.SIGPIPE, syscall.SIGURG, syscall.SIGPROF}

// trapScript: a child and a grandchild (its process group) that log the
// three signals and WINCH (28, above them all: a shell runs pending traps
// lowest number first, so a WINCH line proves none of the three was
// pending) to dir/log.
func trapScript(dir string) string {
	return fmt.Sprintf(`
export F=%[1]s/log
for s in PIPE URG PROF WINCH; do trap "echo child $s >> $F" $s; done
sh -c '
	for s in PIPE URG PROF WINCH; do trap "echo grandchild $s >> $F" $s; done
	echo grandchild $$ >> $F
	echo grandchild ready >> $F
	while [ ! -e %[1]s/stop ]; do sleep 0.05 & wait $!; done' &
echo child ready >> $F
while [ ! -e %[1]s/stop ]; do sleep 0.05 & wait $!; done
wait
exit 5`, dir)
}

func TestExecForwardsRuntimeSignals(t *testing.T) {
	for _, m := range initModes {
		for _, single := range []bool{false, true} {
			name := m.name + "/group"
			var flags []string
			if single {
				name, flags = m.name+"/single-child", []string{"--single-child"}
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				log := filepath.Join(dir, "log")
				r := startInit(t, m, nil, nil, append(flags, "--", "sh", "-c", trapScript(dir))...)
				waitLine(t, log, "child ready")
				waitLine(t, log, "grandchild ready")
				for _, sig := range runtimeSignals {
					name := unix.SignalName(sig)[3:]
					r.signal(sig)
					waitLine(t, log, "child "+name)
					if !single {
						waitLine(t, log, "grandchild "+name)
					}
				}
				if single {
					// Had the group been signalled, the three would be
					// pending at the grandchild before this WINCH.
					gc := grandchildPid(t, log)
					if m.pid1 {
						gc = hostPidOf(t, r.initPid(), "sh", gc)
					}
					if err := syscall.Kill(gc, syscall.SIGWINCH); err != nil {
						t.Fatal(err)
					}
					waitLine(t, log, "grandchild WINCH")
				}
				for _, sig := range runtimeSignals {
					name := unix.SignalName(sig)[3:]
					if n := lineCount(t, log, "child "+name); n != 1 {
						t.Errorf("the child got %s %d times, want once", name, n)
					}
					want := 1
					if single {
						want = 0
					}
					if n := lineCount(t, log, "grandchild "+name); n != want {
						t.Errorf("the grandchild got %s %d times, want %d", name, n, want)
					}
				}
				r.stopScript(dir)
			})
		}
	}
}

// TestExecSingleChildLeavesTheRestAlone: outside a pid namespace, with
// --single-child, what the command leaves in its process group when it
// exits gets no signal (dumb-init's --single-child); supervise exits with
// the command's code right away. (The grandchild's stdio is /dev/null:
// it outlives supervise and must not hold the test's output pipe.)
func TestExecSingleChildLeavesTheRestAlone(t *testing.T) {
	m := initModes[1] // subreaper: outside a pid namespace
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := fmt.Sprintf(`
F=%[1]s/log
sh -c '
	for s in TERM HUP INT CONT; do trap "echo grandchild $s >> '$F'" $s; done
	echo $$ > %[1]s/gc.pid
	while [ ! -e %[1]s/stop ]; do sleep 0.05 & wait $!; done' </dev/null >/dev/null 2>&1 &
while [ ! -s %[1]s/gc.pid ]; do sleep 0.01; done
exit 3`, dir)
	r := startInit(t, m, nil, nil, "--single-child", "--grace", "2s", "--", "sh", "-c", script)
	if code, _ := r.wait(60 * time.Second); code != 3 {
		t.Fatalf("exit code %d, want 3\n%s", code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "gc.pid"))
	if err != nil {
		t.Fatal(err)
	}
	gc, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(gc, syscall.SIGKILL) })
	// supervise has exited: anything it would have sent is delivered.
	if !alive(gc) {
		t.Fatalf("the grandchild %d is gone: --single-child must leave it alone\nlog: %q", gc, readLines(t, log))
	}
	if lines := readLines(t, log); len(lines) > 0 {
		t.Errorf("the grandchild was signalled: %q", lines)
	}
	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the grandchild to end on its own", 60*time.Second, func() bool { return !alive(gc) })
}

// TestExecForwardsFaultSignalsAndSurvivesAFlood: the fault signals sent by
// another process are signals to forward, never the init's own crash (the
// Go runtime throws on a SIGILL or SIGTRAP nobody asked for, and PID 1
// must not die of an input); and a flood of signals while the command
// exits does not make the init miss the exit.
func TestExecForwardsFaultSignalsAndSurvivesAFlood(t *testing.T) {
	faults := []string{"ILL", "TRAP", "ABRT", "BUS", "FPE", "SEGV", "SYS"}
	for _, m := range initModes {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "log")
			script := fmt.Sprintf(`
F=%[1]s/log
for s in %[2]s; do trap "echo child $s >> $F" $s; done
trap '' USR1
echo child ready >> $F
while [ ! -e %[1]s/stop ]; do sleep 0.05 & wait $!; done
exit 5`, dir, strings.Join(faults, " "))
			r := startInit(t, m, nil, nil, "--", "sh", "-c", script)
			waitLine(t, log, "child ready")
			for _, name := range faults {
				r.signal(unix.SignalNum("SIG" + name))
				waitLine(t, log, "child "+name)
			}
			pid := r.initPid()
			stop := make(chan struct{})
			flooded := make(chan int)
			go func() {
				n := 0
				for {
					select {
					case <-stop:
						flooded <- n
						return
					default:
					}
					if syscall.Kill(pid, syscall.SIGUSR1) != nil {
						flooded <- n
						return
					}
					n++
				}
			}()
			if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			code, _ := r.wait(60 * time.Second)
			close(stop)
			t.Logf("%d SIGUSR1 sent while the command exited", <-flooded)
			if code != 5 {
				t.Errorf("exit code %d, want 5\n%s", code, r.stderr)
			}
			for _, name := range faults {
				if n := lineCount(t, log, "child "+name); n != 1 {
					t.Errorf("the child got %s %d times, want once", name, n)
				}
			}
		})
	}
}
