package integration

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freePort returns a TCP port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// An HTTP server behind a readiness probe gates its dependent; killing its
// listener (the program itself lives on) makes the liveness probe restart
// it; s6-style fd notification makes a program ready only when it writes
// its newline, at the default fd 3 and at fd 5 inside a pid namespace.
func TestHealthHTTPServerAndFdNotify(t *testing.T) {
	needPython(t)
	needRoot(t)
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	dir, file := writeConfig(t, fmt.Sprintf(`
[program.web]
# The listener is a child of the program: killing it leaves the program
# running, and only the liveness probe can tell.
command = ["sh", "-c", "until [ -f go-web ]; do sleep 0.05; done; python3 -m http.server %[1]d --bind 127.0.0.1 & exec sleep 1000"]
[program.web.backoff]
initial = "0s"
[program.web.probes.startup]
tcp = "127.0.0.1:%[1]d"
period = "100ms"
failure_threshold = 600
[program.web.probes.readiness]
http = %[2]q
period = "100ms"
[program.web.probes.liveness]
http = %[2]q
period = "100ms"
timeout = "2s"
failure_threshold = 2

[program.webclient]
command = ["sleep", "1000"]
depends_on = ["web"]

[program.fd3]
command = ["sh", "-c", "until [ -f go-fd3 ]; do sleep 0.05; done; echo >&3; exec sleep 1000"]
notify = "fd"

[program.fd5]
command = ["sh", "-c", "until [ -f go-fd5 ]; do sleep 0.05; done; echo ready >&5; exec 5>&-; exec sleep 1000"]
notify = "fd"
notify_fd = 5
[program.fd5.sandbox]
namespaces = ["pid", "mount"]

[program.fdclient]
command = ["sleep", "1000"]
depends_on = ["fd3", "fd5"]
`, port, url))
	d := startDaemon(t, dir, file)
	eventually(t, "web, fd3, fd5 running; dependents waiting", 30*time.Second, func() bool {
		s := d.healthStatus()
		return s["web"].State == "Running" && s["fd3"].State == "Running" && s["fd5"].State == "Running" &&
			s["webclient"].State == "Waiting" && s["fdclient"].State == "Waiting"
	})
	time.Sleep(500 * time.Millisecond) // five probe periods: nothing may be ready yet
	s := d.healthStatus()
	for _, n := range []string{"web", "fd3", "fd5"} {
		if s[n].Ready == nil || *s[n].Ready {
			t.Fatalf("%s ready before it said so: %+v", n, s[n])
		}
	}

	if w := s["web"]; w.Probes["startup"].OK || w.Probes["startup"].Message == "" || !strings.HasPrefix(w.Message, "startup probe: ") {
		t.Errorf("web before it listens: want a failed startup probe in status, got %+v", w)
	}
	// fd notification: each becomes ready on its own newline only.
	if err := writeFileNow(filepath.Join(dir, "go-fd3")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "fd3 ready", 30*time.Second, func() bool { return isReady(d.healthStatus()["fd3"]) })
	if s := d.healthStatus(); isReady(s["fd5"]) || s["fdclient"].State != "Waiting" {
		t.Fatalf("fd5 ready or fdclient started before fd5 wrote: %+v %+v", s["fd5"], s["fdclient"])
	}
	if err := writeFileNow(filepath.Join(dir, "go-fd5")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "fd5 ready, fdclient running", 30*time.Second, func() bool {
		s := d.healthStatus()
		return isReady(s["fd5"]) && s["fdclient"].State == "Running"
	})

	// The HTTP server: ready once it serves, and then its dependent starts.
	if err := writeFileNow(filepath.Join(dir, "go-web")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "web ready, webclient running", 60*time.Second, func() bool {
		s := d.healthStatus()
		return isReady(s["web"]) && s["webclient"].State == "Running"
	})
	web := d.healthStatus()["web"]
	if r := web.Probes["readiness"]; !r.OK || r.Message != "HTTP 200" {
		t.Errorf("web ready: readiness probe in status %+v, want ok, HTTP 200", r)
	}
	kids := childPids(web.Pid)
	if len(kids) != 1 {
		t.Fatalf("web (pid %d) has children %v, want the one python listener", web.Pid, kids)
	}
	if err := syscall.Kill(kids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "web restarted for its liveness", 30*time.Second, func() bool {
		st := d.healthStatus()["web"]
		return st.LastExit != nil && st.LastExit.Reason == "LivenessProbeFailed"
	})
	if !alive(d.healthStatus()["webclient"].Pid) {
		t.Errorf("webclient died with web's restart")
	}
	eventually(t, "web serving again with a new pid", 60*time.Second, func() bool {
		st := d.healthStatus()["web"]
		return st.State == "Running" && st.Pid != web.Pid && isReady(st)
	})
}

// Under systemd (Type=notify) supervise says READY=1 only once every
// autostart program is ready, and its programs never see its own
// NOTIFY_SOCKET.
func TestSystemdNotifyAfterProgramsReady(t *testing.T) {
	dir, file := writeConfig(t, `
[program.slow]
command = ["sh", "-c", "until [ -f go ]; do sleep 0.05; done; echo up; exec sleep 1000"]
ready_log_line = "^up$"

[program.env]
command = ["sh", "-c", "echo \"socket=[$NOTIFY_SOCKET]\"; exec sleep 1000"]

[program.oneshot]
command = ["true"]
restart = "never"
`)
	sockPath := filepath.Join(dir, "systemd.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	t.Setenv("NOTIFY_SOCKET", sockPath)
	d := startDaemon(t, dir, file)
	eventually(t, "slow running and env printed", 30*time.Second, func() bool {
		return d.status()["slow"].State == "Running" && strings.Contains(d.stdout.String(), "socket=[")
	})
	if !strings.Contains(d.stdout.String(), "socket=[]") {
		t.Errorf("a program inherited supervise's NOTIFY_SOCKET: %q", d.stdout.String())
	}
	time.Sleep(300 * time.Millisecond)
	for len(msgs) > 0 {
		if m := <-msgs; strings.Contains(m, "READY=1") {
			t.Fatalf("READY=1 before slow was ready: %q", m)
		}
	}
	if err := writeFileNow(filepath.Join(dir, "go")); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("notify socket closed")
			}
			if strings.Contains(m, "READY=1") {
				if !isReady(d.healthStatus()["slow"]) {
					t.Fatalf("READY=1 while slow is not ready")
				}
				return
			}
		case <-deadline:
			t.Fatal("no READY=1 within 30s of slow becoming ready")
		}
	}
}
