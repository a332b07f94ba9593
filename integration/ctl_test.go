package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const ctlConfig = `
[program.web]
command = ["sh", "-c", "trap 'echo got HUP >> hup.log' HUP; i=0; while :; do echo \"web line $i\"; i=$((i+1)); sleep 0.05; done"]
[program.worker]
command = ["sleep", "1000"]
[program.crash]
command = ["sh", "-c", "echo crash-start; exit 1"]
[program.crash.backoff]
initial = "1h"
`

func TestCtlStatusRestartStopStartSignal(t *testing.T) {
	dir, file := writeConfig(t, ctlConfig)
	d := startDaemon(t, dir, file)
	eventually(t, "three programs up", 30*time.Second, func() bool {
		s := d.status()
		return s["web"].State == "Running" && s["worker"].State == "Running" && s["crash"].State == "CrashLoopBackOff"
	})
	s := d.status()
	if len(s) != 3 {
		t.Fatalf("status has %d programs, want 3", len(s))
	}
	if s["crash"].NextStartInMs <= 0 || s["crash"].LastExit == nil || s["crash"].LastExit.Code != 1 {
		t.Errorf("crash status %+v", s["crash"])
	}
	out, code := d.ctl("status")
	if code != 0 || !strings.Contains(out, "CrashLoopBackOff (next start in") {
		t.Errorf("status table (code %d):\n%s", code, out)
	}

	// restart changes the pid, and clears the backoff of a crash-looping program.
	oldPid := s["web"].Pid
	d.ctlOK("restart", "web")
	// crash ends at once: whether a waiting restart saw its short run as
	// ready is a race, so this one does not wait.
	d.ctlOK("restart", "--no-wait", "crash")
	s = d.status()
	if s["web"].Pid == oldPid || s["web"].State != "Running" {
		t.Errorf("after restart web is %+v (old pid %d)", s["web"], oldPid)
	}
	// The restart cleared crash's backoff: it ran at once (a second run), and
	// its next crash is the first of a fresh sequence, so it restarts at once
	// again before backing off.
	eventually(t, "crash back in backoff", 30*time.Second, func() bool { return d.status()["crash"].State == "CrashLoopBackOff" })
	if r := d.status()["crash"].Restarts; r < 2 {
		t.Errorf("crash restarts %d, want >= 2 after a manual restart", r)
	}

	// stop leaves it Stopped until start.
	d.ctlOK("stop", "worker")
	if st := d.status()["worker"]; st.State != "Stopped" || st.Pid != 0 {
		t.Errorf("after stop: %+v", st)
	}
	time.Sleep(300 * time.Millisecond) // nothing should bring it back on its own
	if st := d.status()["worker"]; st.State != "Stopped" {
		t.Errorf("worker came back by itself: %+v", st)
	}
	d.ctlOK("start", "worker")
	if st := d.status()["worker"]; st.State != "Running" || st.Pid == 0 {
		t.Errorf("after start: %+v", st)
	}

	// signal HUP reaches the program.
	d.ctlOK("signal", "HUP", "web")
	eventually(t, "web got HUP", 10*time.Second, func() bool { return len(readLines(t, filepath.Join(dir, "hup.log"))) > 0 })

	// Errors: an unknown program is exit 1, a bad usage exit 2.
	if _, code := d.ctl("restart", "nosuch"); code != 1 {
		t.Errorf("restart nosuch: exit %d, want 1", code)
	}
	if _, code := d.ctl("signal"); code != 2 {
		t.Errorf("signal without args: exit %d, want 2", code)
	}
}

func TestCtlNoSupervisorExit3(t *testing.T) {
	cmd := exec.Command(ctlBinary, "--socket", filepath.Join(t.TempDir(), "none.sock"), "status")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "none.sock") {
		t.Fatalf("exit %v, output %q; want 3 naming the socket", err, out)
	}
}

func TestCtlLogsAndEventsFollow(t *testing.T) {
	dir, file := writeConfig(t, ctlConfig)
	d := startDaemon(t, dir, file)
	eventually(t, "web has 10 lines", 30*time.Second, func() bool {
		out, _ := d.ctl("logs", "-n", "10", "web")
		return strings.Count(out, "web line") >= 10
	})
	out, code := d.ctl("logs", "-n", "5", "web")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 {
		t.Fatalf("logs -n 5: exit %d, %d lines:\n%s", code, len(lines), out)
	}

	// logs -f keeps streaming across a restart; events -f shows the transitions.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctlPath := ctlBinary
	follow := exec.CommandContext(ctx, ctlPath, "--socket", d.socket, "logs", "-f", "-n", "1", "web")
	logsOut, _ := follow.StdoutPipe()
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	events := exec.CommandContext(ctx, ctlPath, "--socket", d.socket, "events", "-f", "--json")
	evOut, _ := events.StdoutPipe()
	if err := events.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = follow.Wait(); _ = events.Wait() }()

	var mu sync.Mutex
	var got []string
	go func() {
		sc := bufio.NewScanner(logsOut)
		for sc.Scan() {
			mu.Lock()
			got = append(got, sc.Text())
			mu.Unlock()
		}
	}()
	var transitions []string
	go func() {
		sc := bufio.NewScanner(evOut)
		for sc.Scan() {
			var ev struct{ Program, From, To string }
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Program == "web" {
				mu.Lock()
				transitions = append(transitions, ev.From+"→"+ev.To)
				mu.Unlock()
			}
		}
	}()
	before := d.status()["web"].Pid
	// web restarts: killed from outside, it crashes and comes back at once.
	if err := syscall.Kill(before, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "web restarted", 30*time.Second, func() bool {
		s := d.status()["web"]
		return s.State == "Running" && s.Pid != before
	})
	// Lines from the new process (its counter starts over at 0) reach the follower.
	eventually(t, "follower sees the new run", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range got {
			if strings.HasSuffix(l, "web line 1") {
				return true
			}
		}
		return false
	})
	eventually(t, "events show the crash and restart", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		seq := strings.Join(transitions, " ")
		return strings.Contains(seq, "Running→Exited") && strings.Contains(seq, "Starting→Running")
	})
	// With a backoff the sequence goes through CrashLoopBackOff: crash twice.
	second := d.status()["web"].Pid
	_ = syscall.Kill(second, syscall.SIGKILL)
	eventually(t, "CrashLoopBackOff event", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(strings.Join(transitions, " "), "Exited→CrashLoopBackOff")
	})
}

// rawRequest sends bytes on the control socket and returns what came back.
func rawRequest(t *testing.T, socket, req string) string {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return "write error: " + err.Error()
	}
	b, _ := io.ReadAll(c)
	return string(b)
}

func TestCtlSocketSecurityAndBadRequests(t *testing.T) {
	dir, file := writeConfig(t, ctlConfig)
	d := startDaemon(t, dir, file)
	d.running("web")

	fi, err := os.Stat(d.socket)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("socket mode %o, want 600", m)
	}

	bad := map[string]string{
		"malformed json": "POST /v1/restart HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 9\r\nConnection: close\r\n\r\n{\"names\":",
		"unknown verb":   "POST /v1/explode HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
		"garbage":        "\x00\x01\x02 not http at all\r\n\r\n",
	}
	for name, req := range bad {
		resp := rawRequest(t, d.socket, req)
		if !strings.Contains(resp, " 4") {
			t.Errorf("%s: got %q, want a 4xx reply", name, firstLine(resp))
		}
	}
	// A 10 MiB body.
	big := fmt.Sprintf("POST /v1/restart HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", 10<<20) + strings.Repeat("x", 10<<20)
	if resp := rawRequest(t, d.socket, big); strings.Contains(resp, " 200 ") {
		t.Errorf("10 MiB body accepted: %q", firstLine(resp))
	}
	// Half a request, then the client goes away; and a follower that disconnects.
	if c, err := net.Dial("unix", d.socket); err == nil {
		_, _ = io.WriteString(c, "GET /v1/status HTTP/1.1\r\nHo")
		c.Close()
	}
	if c, err := net.Dial("unix", d.socket); err == nil {
		_, _ = io.WriteString(c, "GET /v1/logs?follow=1&name=web HTTP/1.1\r\nHost: x\r\n\r\n")
		buf := make([]byte, 100)
		_, _ = c.Read(buf)
		c.Close()
	}
	// The supervisor still serves.
	if st := d.status(); st["web"].State != "Running" {
		t.Fatalf("after bad requests: %+v", st)
	}

	// Another uid is refused with a clear error, and the supervisor carries on.
	if os.Geteuid() == 0 {
		// The socket's directory must be reachable for the test to mean
		// anything: the refusal must come from the peer check.
		_ = os.Chmod(dir, 0o755)
		_ = os.Chmod(d.socket, 0o666)
		cmd := d.ctlCmd("status")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(strings.ToLower(string(out)), "uid") {
			t.Errorf("uid 65534 was not refused clearly: %v %s", err, out)
		}
		_ = os.Chmod(d.socket, 0o600)
		if st := d.status(); st["web"].State != "Running" {
			t.Fatal("supervisor stopped serving after a refused peer")
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func TestCtlHundredConcurrentClients(t *testing.T) {
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, "[program.p%d]\ncommand = [\"sleep\", \"1000\"]\nstop_timeout = \"2s\"\n", i)
	}
	dir, file := writeConfig(t, b.String())
	d := startDaemon(t, dir, file)
	eventually(t, "10 running", 30*time.Second, func() bool {
		n := 0
		for _, s := range d.status() {
			if s.State == "Running" {
				n++
			}
		}
		return n == 10
	})
	before := d.status()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.socket)
	}}, Timeout: 60 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 100 {
		wg.Go(func() {
			resp, err := client.Get("http://supervise/v1/status")
			if err != nil {
				errs <- err
				return
			}
			var st []programStatus
			if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || len(st) != 10 {
				errs <- fmt.Errorf("status reply: %v (%d programs)", err, len(st))
			}
			resp.Body.Close()
			if i%10 == 0 { // each program restarted once
				body := strings.NewReader(`{"names":["p` + strconv.Itoa(i/10) + `"]}`)
				resp, err := client.Post("http://supervise/v1/restart", "application/json", body)
				if err != nil {
					errs <- err
					return
				}
				if resp.StatusCode != 200 {
					b, _ := io.ReadAll(resp.Body)
					errs <- fmt.Errorf("restart: %d %s", resp.StatusCode, b)
				}
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	after := d.status()
	for name, s := range after {
		if s.State != "Running" || s.Pid == before[name].Pid {
			t.Errorf("%s not restarted: before pid %d, after %+v", name, before[name].Pid, s)
		}
	}
}
