package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/metrics"
)

// holdconns is testdata/holdconns, the hostile client of the listener
// tests.
var holdconns = testdataProgram("holdconns")

// A local user (uid 65534) holds every connection the HTTP listener lets
// it have, dialing again whenever one is closed; a fresh client probing
// /healthz, as a kubelet or a container health check does, must get its
// 200 every time, and the control socket must keep working.
func TestHTTPListenerHeldByKeepAliveClients(t *testing.T) {
	testListenerHeld(t, "keepalive")
}

// The same with connections that never finish their request's headers.
func TestHTTPListenerHeldBySlowlorisClients(t *testing.T) {
	testListenerHeld(t, "slowloris")
}

// The same with four times as many connections as the listener admits,
// each dialed again as soon as it is closed: the probe must not be the
// one closed to make room for them.
func TestHTTPListenerFloodedByOneUser(t *testing.T) {
	testListenerHeld(t, "flood")
}

func testListenerHeld(t *testing.T, mode string) {
	needRoot(t)
	hold := holdconns(t)
	dir, file := writeConfig(t, `
[program.app]
command = ["sleep", "100000"]
`)
	d := startDaemon(t, dir, file, "--http", "127.0.0.1:0")
	addr := d.httpAddr()
	base := "http://" + addr
	d.running("app")

	// As many as the listener admits, a request or a header line every
	// 2 s: well inside the idle and header timeouts.
	n := metrics.MaxConnections
	if mode == "flood" {
		n *= 4
	}
	cmd := exec.Command(hold, "-addr", addr, "-n", fmt.Sprint(n), "-mode", mode, "-every", "2s")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	stopped := false
	stop := func() string {
		if stopped {
			return ""
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		var last string
		for l := range lines {
			last = l
		}
		_ = cmd.Wait()
		return last
	}
	defer stop()
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "holding ") {
			t.Fatalf("holdconns: %q %s", l, stderr.String())
		}
	case <-time.After(120 * time.Second):
		t.Fatalf("holdconns did not get its %d connections: %s", n, stderr.String())
	}

	// Probes for 12 s: past several rounds of the held connections'
	// requests and past the 5 s header timeout.
	var failed []string
	probes := 0
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); probes++ {
		if code, body := get(t, "GET", base+"/healthz", nil); code != 200 {
			failed = append(failed, fmt.Sprintf("%d %q", code, strings.TrimSpace(body)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, code := d.ctl("status"); code != 0 {
		t.Errorf("supervisectl status while the listener is held: exit %d", code)
	}
	fds := countFDs(t, d.cmd.Process.Pid)
	counts := stop()
	t.Logf("%s: %d probes, %d not answered 200; supervise held %d descriptors; the holder: %s", mode, probes, len(failed), fds, counts)
	if len(failed) > 0 {
		t.Errorf("%d of %d /healthz probes not answered 200 while uid 65534 held %d connections (%s); first: %s",
			len(failed), probes, metrics.MaxConnections, mode, failed[0])
	}
	if fds > 2*metrics.MaxConnections+40 {
		t.Errorf("supervise holds %d descriptors", fds)
	}
}
