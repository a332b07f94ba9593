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
)

// Upgrades in place of programs with a readiness notification channel
// (notify = "sd_notify" with its watchdog, notify = "fd"): the socket or
// pipe crosses the exec, what the program sends meanwhile waits in it,
// and readiness and the watchdog's deadline carry over.

// notifier is an sd_notify client, the program's main process itself
// (so the supervisor always knows the sender): it writes its
// NOTIFY_SOCKET to RECORD and sends on a socket connected once, which a
// notify socket re-created under the same path would refuse.
//
//	late:  READY=1 once FLAG exists, then nothing.
//	ping:  READY=1, then WATCHDOG=1 every 0.2 s until FLAG exists (never
//	       for the tests' pingers); then FLAG.stopped gets the time of its
//	       last ping and it sleeps.
const notifier = `
import os, socket, sys, time
mode, record, flag = sys.argv[1:4]
path = os.environ["NOTIFY_SOCKET"]
with open(record, "w") as f:
    f.write(path)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.connect(path)
if mode == "late":
    while not os.path.exists(flag):
        time.sleep(0.05)
    s.send(b"READY=1\nSTATUS=ready after the upgrade")
    time.sleep(1000000)
s.send(b"READY=1\nSTATUS=pinging")
last = time.time()
while not os.path.exists(flag):
    s.send(b"WATCHDOG=1")
    last = time.time()
    time.sleep(0.2)
with open(flag + ".stopped", "w") as f:
    f.write(repr(last))
time.sleep(1000000)
`

// writeNotifier puts the sd_notify client in dir.
func writeNotifier(t *testing.T, dir string) string {
	t.Helper()
	needPython(t)
	path := filepath.Join(dir, "notifier.py")
	if err := os.WriteFile(path, []byte(notifier), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// socketOf reads the NOTIFY_SOCKET a notifier recorded, and its inode.
func socketOf(t *testing.T, record string) (string, uint64) {
	t.Helper()
	var path string
	eventually(t, record+" written", 30*time.Second, func() bool {
		b, err := os.ReadFile(record)
		path = string(b)
		return err == nil && path != ""
	})
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatalf("the notify socket %s: %v", path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		t.Fatalf("%s is not a socket", path)
	}
	return path, st.Ino
}

// TestUpgradeKeepsNotifyPrograms: programs with sd_notify (one pinging
// its watchdog, one ready only after the upgrade) and with an s6-style
// notification fd (one ready before, one after), the late ones in pid
// namespaces (their sandbox init crosses too), cross several upgrades
// with the same pids: the pinger is never killed and stays ready, the
// late ones become ready under the new binary (and their dependent
// starts), the socket stays the same file throughout and is removed
// when its program stops. A new binary that refuses the take-over hands
// them back to the old one, which goes on reading them.
func TestUpgradeKeepsNotifyPrograms(t *testing.T) {
	dir := t.TempDir()
	py := writeNotifier(t, dir)
	d, exe := upgradeDaemon(t, fmt.Sprintf(`
[program.pinger]
command = ["python3", %[1]q, "ping", "pinger.sock", "never"]
notify = "sd_notify"
watchdog = "5s"

[program.late]
command = ["python3", %[1]q, "late", "late.sock", "go-late"]
notify = "sd_notify"
[program.late.sandbox]
namespaces = ["pid", "mount"]

[program.afterlate]
command = ["sleep", "1000"]
depends_on = ["late"]

[program.fdready]
command = ["sh", "-c", "echo >&3; until [ -f go-fd-again ]; do sleep 0.05; done; echo again >&3; exec sleep 1000"]
notify = "fd"

[program.fdlate]
command = ["sh", "-c", "until [ -f go-fd ]; do sleep 0.05; done; echo >&5; exec sleep 1000"]
notify = "fd"
notify_fd = 5
[program.fdlate.sandbox]
namespaces = ["pid", "mount"]
`, py))
	eventually(t, "pinger and fdready ready, late and fdlate running", 60*time.Second, func() bool {
		s := d.healthStatus()
		return isReady(s["pinger"]) && isReady(s["fdready"]) &&
			s["late"].State == "Running" && s["fdlate"].State == "Running" && s["afterlate"].State == "Waiting"
	})
	sock, ino := socketOf(t, filepath.Join(d.dir, "pinger.sock"))
	lateSock, lateIno := socketOf(t, filepath.Join(d.dir, "late.sock"))
	if s := d.healthStatus(); isReady(s["late"]) || isReady(s["fdlate"]) {
		t.Fatalf("late or fdlate ready before they said so: %+v", s)
	}
	before := d.pids()

	binaries := []string{"v2", "v1", "v2"}
	for i, b := range binaries {
		d.upgradeTo(exe, b)
		s := d.healthStatus()
		if got := d.pids(); !mapsEqual(got, before) {
			t.Fatalf("upgrade %d: pids changed:\nbefore %v\nafter  %v", i+1, before, got)
		}
		if !isReady(s["pinger"]) || !isReady(s["fdready"]) {
			t.Fatalf("upgrade %d: pinger or fdready not ready any more: %+v %+v", i+1, s["pinger"], s["fdready"])
		}
		if isReady(s["late"]) || isReady(s["fdlate"]) || s["afterlate"].State != "Waiting" {
			t.Fatalf("upgrade %d: late or fdlate ready, or afterlate started, before they said so: %+v", i+1, s)
		}
		if s["pinger"].Message != "pinging" {
			t.Errorf("upgrade %d: pinger's STATUS= is %q, want %q", i+1, s["pinger"].Message, "pinging")
		}
	}
	// A new binary that refuses the take-over: the old one gets the
	// sockets and pipes back, and goes on reading them.
	installBinary(t, upgradeBuild(t, "refuses"), exe, 0o755)
	if out, code := d.ctl("upgrade"); code != 1 || !strings.Contains(out, "refusing the take-over") {
		t.Fatalf("upgrade to a binary that refuses: exit %d: %s", code, out)
	}
	if v := d.version(); v.Version != "v2.0.0-test" {
		t.Fatalf("after the fall-back supervise is %s, want v2.0.0-test", v.Version)
	}
	// Longer than the watchdog: the pings reach the new binary.
	time.Sleep(6 * time.Second)
	if s := d.healthStatus()["pinger"]; s.Pid != before["pinger"] || s.Restarts != 0 || s.LastExit != nil || !isReady(s) {
		t.Fatalf("pinger after the upgrades: %+v, want pid %d never restarted and ready", s, before["pinger"])
	}

	// Said after the upgrades: heard by the binary now running.
	for _, f := range []string{"go-late", "go-fd", "go-fd-again"} {
		if err := writeFileNow(filepath.Join(d.dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "late and fdlate ready, afterlate running", 60*time.Second, func() bool {
		s := d.healthStatus()
		return isReady(s["late"]) && isReady(s["fdlate"]) && s["afterlate"].State == "Running"
	})
	if m := d.healthStatus()["late"].Message; m != "ready after the upgrade" {
		t.Errorf("late's STATUS= is %q", m)
	}
	// fdready wrote to its descriptor again: still read, no SIGPIPE.
	time.Sleep(500 * time.Millisecond)
	s := d.healthStatus()
	for _, n := range []string{"pinger", "late", "fdready", "fdlate"} {
		if s[n].Pid != before[n] || s[n].Restarts != 0 {
			t.Errorf("%s: %+v, want pid %d never restarted", n, s[n], before[n])
		}
	}

	// The socket files are the very ones the programs were given.
	for path, want := range map[string]uint64{sock: ino, lateSock: lateIno} {
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil || st.Ino != want {
			t.Errorf("%s after the upgrades: %v, inode %d, want the same socket (inode %d)", path, err, st.Ino, want)
		}
	}
	// Stopped, a program's socket and its directory go, as before.
	d.ctlOK("stop", "late", "pinger")
	for _, path := range []string{sock, lateSock} {
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Errorf("%s after its program stopped: %v, want it removed", path, err)
		}
		if _, err := os.Lstat(filepath.Dir(path)); !os.IsNotExist(err) {
			t.Errorf("%s after its program stopped: %v, want it removed", filepath.Dir(path), err)
		}
	}
	d.shutdown(60 * time.Second)
}

// TestUpgradeKeepsAWatchdogDeadline: a program that stopped pinging its
// watchdog before an upgrade is killed when its deadline passes, not a
// full interval after the new binary took over, and is restarted.
func TestUpgradeKeepsAWatchdogDeadline(t *testing.T) {
	dir := t.TempDir()
	py := writeNotifier(t, dir)
	const interval = 8 * time.Second
	d, exe := upgradeDaemon(t, fmt.Sprintf(`
[program.lapse]
command = ["python3", %q, "ping", "lapse.sock", "stop-pinging"]
notify = "sd_notify"
watchdog = "%s"
`, py, interval))
	eventually(t, "lapse ready", 60*time.Second, func() bool { return isReady(d.healthStatus()["lapse"]) })
	pid := d.healthStatus()["lapse"].Pid
	if err := writeFileNow(filepath.Join(d.dir, "stop-pinging")); err != nil {
		t.Fatal(err)
	}
	var lastPing time.Time
	eventually(t, "lapse stopped pinging", 30*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(d.dir, "stop-pinging.stopped"))
		if err != nil || len(b) == 0 {
			return false
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		lastPing = time.Unix(0, int64(f*1e9))
		return err == nil
	})
	// Half the interval gone, the upgrade: a fresh interval would give
	// the program until 8 s after the take-over.
	time.Sleep(interval / 2)
	upgradeAt := time.Now()
	d.upgradeTo(exe, "v2")
	var st healthStatus
	eventually(t, "lapse killed by its watchdog and restarted", 60*time.Second, func() bool {
		st = d.healthStatus()["lapse"]
		return st.LastExit != nil && st.Pid != 0 && st.Pid != pid
	})
	if st.LastExit.Reason != "WatchdogTimeout" {
		t.Fatalf("lapse ended for %q, want WatchdogTimeout", st.LastExit.Reason)
	}
	killed := st.LastExit.FinishedAt
	t.Logf("killed %s after the last ping, %s after the upgrade began", killed.Sub(lastPing).Round(time.Millisecond), killed.Sub(upgradeAt).Round(time.Millisecond))
	if killed.Before(lastPing.Add(interval - time.Second)) {
		t.Errorf("lapse killed at %s, before its deadline (last ping %s + %s)", killed.Format(time.StampMilli), lastPing.Format(time.StampMilli), interval)
	}
	if !killed.Before(upgradeAt.Add(interval)) {
		t.Errorf("lapse killed at %s, a full watchdog interval after the upgrade began (%s): its deadline (last ping %s + %s) did not carry over",
			killed.Format(time.StampMilli), upgradeAt.Format(time.StampMilli), lastPing.Format(time.StampMilli), interval)
	}
	if v := d.version(); v.Version != "v2.0.0-test" {
		t.Errorf("supervise is %s, want v2.0.0-test", v.Version)
	}
	d.shutdown(60 * time.Second)
}

// An exec slower than the watchdog's interval (a loaded machine): the
// pings the program sent meanwhile wait in the socket, and the restored
// watchdog, its time run out, waits for the new binary's reader to hand
// them on instead of killing a program that pinged all along. The "slow"
// build waits 5 s before it takes over, so the 4 s interval has always
// run out by then; an interval that long leaves the pinger and the new
// reader room on a loaded machine.
func TestUpgradeSlowerThanTheWatchdog(t *testing.T) {
	dir := t.TempDir()
	py := writeNotifier(t, dir)
	d, exe := upgradeDaemon(t, fmt.Sprintf(`
[program.pinger]
command = ["python3", %q, "ping", "pinger.sock", "never"]
notify = "sd_notify"
watchdog = "4s"
`, py))
	eventually(t, "pinger ready", 60*time.Second, func() bool { return isReady(d.healthStatus()["pinger"]) })
	pid := d.healthStatus()["pinger"].Pid
	installBinary(t, upgradeBuild(t, "slow"), exe, 0o755)
	start := time.Now()
	d.upgrade("upgrade to slow")
	t.Logf("the upgrade took %s", time.Since(start).Round(time.Millisecond))
	time.Sleep(6 * time.Second) // more than the interval, after the take-over
	st := d.healthStatus()["pinger"]
	if st.Pid != pid || st.Restarts != 0 || st.LastExit != nil || !isReady(st) {
		t.Fatalf("after an upgrade slower than its watchdog, pinger is %+v (last exit %+v), want pid %d still running and ready", st, st.LastExit, pid)
	}
	if v := d.version(); v.Version != "v2.0.0-slow" {
		t.Errorf("supervise is %s, want v2.0.0-slow", v.Version)
	}
	d.shutdown(60 * time.Second)
}
