package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A supervisor killed with SIGKILL leaves its programs' cgroups, and a
// daemonized program with no pid namespace lives on in one; the next
// supervisor removes the cgroup and kills the leftover at start, so it
// cannot collide with the new instance.
func TestLeftoversOfAKilledSupervisorAreSwept(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, `
[program.daemon]
command = ["sh", "-c", "setsid sleep 1000 & echo $! > leftover.pid; exec sleep 1000"]
[program.daemon.sandbox]
pids_max = 50
`)
	d := startDaemon(t, dir, file)
	var leftover int
	eventually(t, "daemon running and its leftover written", 30*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "leftover.pid"))
		leftover, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && leftover > 0 && d.status()["daemon"].State == "Running"
	})
	program := d.status()["daemon"].Pid
	d.signal(syscall.SIGKILL)
	d.wait(30 * time.Second)
	t.Cleanup(func() {
		_ = syscall.Kill(leftover, syscall.SIGKILL)
		_ = syscall.Kill(program, syscall.SIGKILL)
	})
	time.Sleep(200 * time.Millisecond)
	if !alive(leftover) || !alive(program) {
		t.Fatalf("SIGKILL of the supervisor took its programs along (leftover %d alive %v, program %d alive %v): nothing to sweep", leftover, alive(leftover), program, alive(program))
	}

	_ = os.Remove(filepath.Join(dir, "leftover.pid"))
	d2 := startDaemon(t, dir, file)
	eventually(t, "the old program and its leftover killed", 30*time.Second, func() bool {
		return !alive(leftover) && !alive(program)
	})
	d2.running("daemon")
	if !strings.Contains(d2.stderr.String(), "removed the cgroup of a dead supervisor") {
		t.Errorf("no log of the sweep:\n%s", tail(d2.stderr.String(), 20))
	}
	swept := false
	for _, ev := range d2.events() {
		swept = swept || ev.Program == "daemon" && strings.Contains(ev.Message, "swept the leftovers of a dead supervisor") && strings.Contains(ev.Message, "2 process(es) killed")
	}
	if !swept {
		t.Errorf("no event of the sweep naming daemon and its 2 processes: %+v", d2.events())
	}
}

// TestSweptLeftoverIsGoneBeforeTheNewStart: after a SIGKILL of supervise
// the next one kills the old program, and must not start the new one
// before the old one is gone for good (reaped): a program that checks a
// lock file's pid, as PostgreSQL does with postmaster.pid, would take the
// old one for a live instance and refuse to start. Here the test process
// adopts the orphan and reaps it only 2 s after it died, as a busy init
// might.
func TestSweptLeftoverIsGoneBeforeTheNewStart(t *testing.T) {
	needRoot(t)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	dir, file := writeConfig(t, `
[program.lockd]
command = ["sh", "lockd.sh"]
restart = "never"
sandbox = { pids_max = 16 }
`)
	must(t, os.WriteFile(filepath.Join(dir, "lockd.sh"), []byte(`
if [ -f lock ] && kill -0 "$(cat lock)" 2>/dev/null; then
	echo "lock file already exists: pid $(cat lock) is running"
	exit 1
fi
echo $$ > lock
exec sleep 100000
`), 0o644))
	d := startDaemon(t, dir, file)
	var old int
	eventually(t, "lockd running with its lock", 60*time.Second, func() bool {
		st := d.status()["lockd"]
		lock := readLines(t, filepath.Join(dir, "lock"))
		old = st.Pid
		return st.State == "Running" && len(lock) == 1 && lock[0] == strconv.Itoa(old)
	})
	d.signal(syscall.SIGKILL)
	d.wait(30 * time.Second)

	// The orphan is ours now; reap it 2 s after it dies.
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		deadline := time.Now().Add(2 * time.Minute)
		for alive(old) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(2 * time.Second)
		var ws syscall.WaitStatus
		syscall.Wait4(old, &ws, 0, nil)
	}()
	defer func() { syscall.Kill(old, syscall.SIGKILL); <-reaped }()

	d2 := startDaemon(t, dir, file)
	var st programStatus
	eventually(t, "the new lockd running, or ended", 60*time.Second, func() bool {
		st = d2.status()["lockd"]
		return st.State == "Running" && st.Pid != old || st.LastExit != nil
	})
	if st.State != "Running" || st.LastExit != nil {
		out, _ := d2.ctl("logs", "lockd")
		t.Fatalf("the new lockd did not start: %+v\n%s", st, out)
	}
}

// TestSweepOfASupervisorStillExiting: supervise in the host pid namespace
// is SIGKILLed and started again 0.2 s later, while the old process still
// exists (a zombie its parent has not reaped yet, as a busy shell or init
// leaves it). The new supervise must end the old program before it starts
// its own: the program holds a lock, as PostgreSQL holds postmaster.pid,
// and an instance that finds it taken exits 1. It runs exactly once, under
// the new supervise, without a single restart. A timing bug: five runs.
func TestSweepOfASupervisorStillExiting(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, `
[program.pg]
command = ["sh", "pg.sh"]
`)
	must(t, os.WriteFile(filepath.Join(dir, "pg.sh"), []byte(`
exec 9>>pg.lock
if ! flock -n 9; then
	echo "lock pg.lock is held by another instance"
	exit 1
fi
echo $$ > holder
exec sleep 100000
`), 0o644))
	holder := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "holder"))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return pid
	}
	for run := 1; run <= 5; run++ {
		_ = os.Remove(filepath.Join(dir, "holder"))
		old := startUnreaped(t, dir, file)
		oldCtl := &daemon{t: t, socket: filepath.Join(dir, "s.sock")}
		var oldPg int
		eventually(t, "the first pg running with its lock", 60*time.Second, func() bool {
			oldPg = oldCtl.status()["pg"].Pid
			return oldPg > 0 && holder() == oldPg
		})
		must(t, old.Process.Signal(syscall.SIGKILL))
		t.Cleanup(func() { _ = syscall.Kill(oldPg, syscall.SIGKILL) })
		time.Sleep(200 * time.Millisecond)

		// The old supervise stays a zombie for 3 s: its parent is slow.
		reaped := make(chan struct{})
		go func() {
			defer close(reaped)
			time.Sleep(3 * time.Second)
			_ = old.Wait()
		}()
		d := startDaemon(t, dir, file)
		var st programStatus
		eventually(t, "the new pg running with the lock", 60*time.Second, func() bool {
			st = d.status()["pg"]
			return st.State == "Running" && st.Pid != oldPg && holder() == st.Pid
		})
		<-reaped
		time.Sleep(2 * time.Second) // a crash loop would show by now
		st = d.status()["pg"]
		if alive(oldPg) {
			t.Errorf("run %d: the old pg (pid %d) still runs, unsupervised", run, oldPg)
		}
		if st.State != "Running" || st.Restarts != 0 || holder() != st.Pid {
			out, _ := d.ctl("logs", "pg")
			t.Fatalf("run %d: the new pg is not the one instance, running once: %+v (lock holder %d)\n%s", run, st, holder(), tail(out, 10))
		}
		if log := d.stderr.String(); !strings.Contains(log, "removed the cgroup of a dead supervisor") || !strings.Contains(log, "program=pg") {
			t.Errorf("run %d: no log of the sweep naming pg:\n%s", run, tail(log, 20))
		}
		d.signal(syscall.SIGTERM)
		d.wait(60 * time.Second)
	}
}

// startUnreaped starts supervise on file and leaves it unwaited for: once
// it dies it stays a zombie until the caller's Wait.
func startUnreaped(t *testing.T, dir, file string) *exec.Cmd {
	t.Helper()
	out, err := os.Create(filepath.Join(dir, "unreaped.log"))
	must(t, err)
	t.Cleanup(func() { out.Close() })
	cmd := exec.Command(binary, "run", "-c", file, "--socket", filepath.Join(dir, "s.sock"))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd
}

// A second supervise started on the same configuration by mistake finds
// the first one's cgroups with a live owner: it leaves them, and the first
// one's program, alone.
func TestSweepLeavesALiveSupervisorAlone(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, `
[program.app]
command = ["sleep", "100000"]
`)
	first := startDaemon(t, dir, file)
	var pid int
	eventually(t, "the first app running", 60*time.Second, func() bool {
		st := first.status()["app"]
		pid = st.Pid
		return st.State == "Running"
	})
	second := startDaemon(t, dir, file, "--socket", filepath.Join(dir, "second.sock"))
	second.socket = filepath.Join(dir, "second.sock")
	eventually(t, "the second app running", 60*time.Second, func() bool {
		return second.status()["app"].State == "Running"
	})
	if st := first.status()["app"]; !alive(pid) || st.State != "Running" || st.Pid != pid {
		t.Fatalf("the second supervise swept a live one's program: pid %d alive %v, status %+v", pid, alive(pid), st)
	}
	if log := second.stderr.String(); strings.Contains(log, "removed the cgroup") {
		t.Errorf("the second supervise removed a cgroup:\n%s", tail(log, 20))
	}
}
