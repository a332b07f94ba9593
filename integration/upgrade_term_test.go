package integration

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A SIGTERM that comes while an upgrade in place waits before its exec
// (here for a client that connected and sent nothing) stops supervise:
// the upgrade is given up, not carried out with the shutdown lost in the
// old binary.
func TestSIGTERMDuringAnUpgradesWaitStopsSupervise(t *testing.T) {
	d, exe := upgradeDaemon(t, `
[program.a]
command = ["sh", "-c", "exec sleep 3600"]
`)
	pid := d.running("a")["a"]
	installBinary(t, upgradeBuild(t, "v2"), exe, 0o755)

	// A silent client: the wait before the exec gives it up to 5 s.
	c, err := net.Dial("unix", d.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	d.signal(syscall.SIGUSR2)
	eventually(t, "the upgrade waiting for the silent client", 30*time.Second, func() bool {
		return strings.Contains(d.stderr.String(), "upgrading: executing the new binary")
	})
	d.signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("supervise still runs 60 s after a SIGTERM sent during an upgrade's wait (version %s)\n%s",
			d.version().Version, tail(d.stderr.String(), 20))
	}
	if alive(pid) {
		t.Errorf("program a (pid %d) outlived supervise", pid)
	}
	if !strings.Contains(d.stderr.String(), "upgrade given up") {
		t.Errorf("supervise did not say that it gave the upgrade up\n%s", tail(d.stderr.String(), 20))
	}
}
