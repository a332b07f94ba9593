package integration

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// programCgroups lists the cgroups of program name that exist in any v1
// hierarchy (or the unified one), by their directory names.
func programCgroups(t *testing.T, name string) []string {
	t.Helper()
	var found []string
	for _, base := range []string{"/sys/fs/cgroup/pids/supervise", "/sys/fs/cgroup/memory/supervise", "/sys/fs/cgroup/unified/supervise", "/sys/fs/cgroup/supervise"} {
		ents, err := os.ReadDir(base)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), name+"-") {
				found = append(found, filepath.Join(base, e.Name()))
			}
		}
	}
	return found
}

// TestStartFailingForDescriptorsLeavesNothing: when supervise is out of
// descriptors (EMFILE) a start fails; what that start created must go (or
// be reused), so that once descriptors are back the program runs in one
// cgroup and, stopped, leaves none.
func TestStartFailingForDescriptorsLeavesNothing(t *testing.T) {
	needRoot(t)
	const name = "fdstarved"
	dir, file := writeConfig(t, `
[program.fdstarved]
command = ["sleep", "100000"]
sandbox = { pids_max = 64 }
[program.fdstarved.backoff]
initial = "1s"
max = "2s"
`)
	d := startDaemon(t, dir, file)
	pid := d.running(name)[name]
	if cgs := programCgroups(t, name); len(cgs) == 0 {
		t.Fatalf("no cgroup of %s found; the test cannot see what it checks", name)
	}
	spid := d.cmd.Process.Pid
	// The soft limit only: raising a hard limit back needs
	// CAP_SYS_RESOURCE, which a container may not have.
	old := d.keepNofile()
	baseline := d.fdCount()

	// Each round leaves the restart a few descriptors fewer or more, so
	// that it runs out at a different step: the sandbox, the notify
	// socket, the log pipes, the fork, or not at all.
	failures := 0
	for headroom := -3; headroom <= 6; headroom++ {
		fails := strings.Count(d.stderr.String(), "too many open files")
		starved := unix.Rlimit{Cur: uint64(d.fdCount() + headroom), Max: old.Max}
		if err := unix.Prlimit(spid, unix.RLIMIT_NOFILE, &starved, nil); err != nil {
			t.Fatalf("prlimit: %v", err)
		}
		started := strings.Count(d.stderr.String(), "msg=started")
		syscall.Kill(pid, syscall.SIGKILL)
		// supervise can answer no status now; its log says how the
		// restart went: failed for lack of descriptors, or started.
		eventually(t, "the restart to fail or succeed", 60*time.Second, func() bool {
			log := d.stderr.String()
			return strings.Count(log, "too many open files") > fails || strings.Count(log, "msg=started") > started
		})
		if strings.Count(d.stderr.String(), "too many open files") > fails {
			failures++
		}
		if err := unix.Prlimit(spid, unix.RLIMIT_NOFILE, &old, nil); err != nil {
			t.Fatalf("restoring the descriptor limit: %v", err)
		}
		eventually(t, "fdstarved running again", 120*time.Second, func() bool {
			st := d.status()[name]
			if st.State == "Running" && st.Pid > 0 && st.Pid != pid {
				pid = st.Pid
				return true
			}
			return false
		})
		if cgs := programCgroups(t, name); len(cgs) != countHierarchies(t, name, cgs) {
			t.Fatalf("headroom %d: cgroups of %s while one instance runs: %v", headroom, name, cgs)
		}
	}
	t.Logf("%d of 10 restarts ran out of descriptors:\n%s", failures, grepLines(d.stderr.String(), "too many open files"))
	if failures == 0 {
		t.Fatalf("no start ran out of descriptors; the test checked nothing")
	}
	// Descriptors the failed starts took are all back (a few may be
	// a supervisectl connection closing).
	eventually(t, "supervise's descriptors back to where they were", 60*time.Second, func() bool {
		return d.fdCount() <= baseline
	})
	d.ctlOK("stop", name)
	eventually(t, "no cgroup of fdstarved left", 60*time.Second, func() bool {
		return len(programCgroups(t, name)) == 0
	})
}

// fdCount is how many descriptors supervise has open.
func (d *daemon) fdCount() int {
	d.t.Helper()
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/fd")
	if err != nil {
		d.t.Fatal(err)
	}
	return len(fds)
}

// keepNofile returns supervise's descriptor limit, which the test is about
// to shrink, and puts it back at the test's end.
func (d *daemon) keepNofile() unix.Rlimit {
	d.t.Helper()
	pid := d.cmd.Process.Pid
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
		d.t.Fatalf("prlimit: %v", err)
	}
	d.t.Cleanup(func() { unix.Prlimit(pid, unix.RLIMIT_NOFILE, &old, nil) })
	return old
}

// countHierarchies is how many directories one sandbox has among cgs: one
// per hierarchy it was made in. Every directory must have the same name.
func countHierarchies(t *testing.T, name string, cgs []string) int {
	t.Helper()
	names := map[string]bool{}
	for _, c := range cgs {
		names[filepath.Base(c)] = true
	}
	if len(names) != 1 {
		return -1
	}
	return len(cgs)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestFollowerFloodLeavesRoomForPrograms: a flood of `logs -f` clients
// against a supervise with few descriptors (a container's limit) is held
// at max_connections / max_followers: supervise's descriptors stay bounded,
// commands still get through, and a crashed program restarts.
func TestFollowerFloodLeavesRoomForPrograms(t *testing.T) {
	needRoot(t)
	const name = "flooded"
	dir, file := writeConfig(t, `
[supervisor]
max_connections = 48
max_followers = 16
[program.flooded]
command = ["sleep", "100000"]
`)
	d := startDaemon(t, dir, file)
	pid := d.running(name)[name]
	spid := d.cmd.Process.Pid
	// 100 descriptors to spare, as under a container's 1024 with a
	// busy supervisor.
	old := d.keepNofile()
	baseline := d.fdCount()
	lim := unix.Rlimit{Cur: uint64(baseline + 100), Max: old.Max}
	if err := unix.Prlimit(spid, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}

	// 1000 followers, held open.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 1000 {
		c, err := net.Dial("unix", d.socket)
		if err != nil {
			continue // the backlog is full while supervise refuses: fine
		}
		conns = append(conns, c)
		io.WriteString(c, "GET /v1/logs?name=flooded&n=0&follow=1 HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	peak := d.fdCount()
	t.Logf("supervise descriptors: %d before the flood, %d during it (limit %d)", baseline, peak, lim.Cur)
	// max_connections, and at most 8 connections being told "too many".
	if peak > baseline+48+8+4 {
		t.Errorf("supervise holds %d descriptors during the flood, over %d + max_connections + 8", peak, baseline)
	}

	// The program crashes; it restarts, and commands still work.
	syscall.Kill(pid, syscall.SIGKILL)
	eventually(t, "flooded running again", 120*time.Second, func() bool {
		st := d.status()[name]
		return st.State == "Running" && st.Pid > 0 && st.Pid != pid
	})
	if strings.Contains(d.stderr.String(), "too many open files") {
		t.Errorf("supervise ran out of descriptors:\n%s", grepLines(d.stderr.String(), "too many open files"))
	}
	if !strings.Contains(d.stderr.String(), "limit reached") {
		t.Errorf("supervise did not say it refused connections")
	}
}
