package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fd3server is testdata/fd3server, the server that serves the socket it
// inherits at descriptor 3.
var fd3server = testdataProgram("fd3server")

// answer is one reply of fd3server, parsed.
type answer struct {
	pid, version, listenPID, fds, names, uid string
}

func parseAnswer(body string) (answer, bool) {
	var a answer
	fields := map[string]*string{"pid": &a.pid, "version": &a.version, "listen_pid": &a.listenPID, "fds": &a.fds, "names": &a.names, "uid": &a.uid}
	for _, f := range strings.Fields(body) {
		k, v, ok := strings.Cut(f, "=")
		if p := fields[k]; ok && p != nil {
			*p = v
		}
	}
	return a, a.pid != ""
}

// clients is a loop of HTTP clients, each request on a new connection,
// that counts what failed (a refused or reset connection above all) and
// which server pids answered. gate is held around each request: a SIGKILL
// sent under it lands between requests, since nothing can save a request
// the killed process had already taken; what the test shows is that the
// connections made while the server is down wait for the next one.
type clients struct {
	addr     string
	gate     sync.RWMutex
	mu       sync.Mutex
	ok       int
	failures []string
	pids     map[string]bool
	last     answer
	bad      []string // answers whose LISTEN_* variables were wrong
	stop     chan struct{}
	wg       sync.WaitGroup
	oks      atomic.Int64
}

func startClients(addr string, n int, wantNames string) *clients {
	c := &clients{addr: addr, pids: map[string]bool{}, stop: make(chan struct{})}
	for range n {
		c.wg.Go(func() {
			tr := &http.Transport{DisableKeepAlives: true}
			hc := &http.Client{Transport: tr, Timeout: 60 * time.Second}
			for {
				select {
				case <-c.stop:
					return
				default:
				}
				c.gate.RLock()
				body, err := fetch(hc, "http://"+addr+"/")
				c.gate.RUnlock()
				c.mu.Lock()
				if err != nil {
					c.failures = append(c.failures, err.Error())
				} else if a, ok := parseAnswer(body); !ok {
					c.failures = append(c.failures, "unexpected answer: "+body)
				} else {
					c.ok++
					c.pids[a.pid] = true
					c.last = a
					if a.listenPID != a.pid || a.fds != "1" || a.names != wantNames {
						c.bad = append(c.bad, body)
					}
				}
				c.mu.Unlock()
				c.oks.Add(1)
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	return c
}

func fetch(hc *http.Client, url string) (string, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	return string(b), nil
}

func (c *clients) lastAnswer() answer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

func (c *clients) seen(pid int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pids[fmt.Sprint(pid)]
}

func (c *clients) end() {
	close(c.stop)
	c.wg.Wait()
}

func srvConfig(srv string, port int, version, extra string) string {
	return fmt.Sprintf(`
[program.srv]
command = [%q]
listen = ["tcp://127.0.0.1:%d?name=http"]
env = { VERSION = %q, START_DELAY = "300ms" }
stop_signal = "TERM"
stop_timeout = "10s"
[program.srv.backoff]
max = "1s"
%s`, srv, port, version, extra)
}

// The single-instance server behind a held socket: under a client loop,
// 5 restarts, 3 SIGKILLs and a reload that changes its environment cost
// no connection (none refused, none reset), and every new process
// answers: LISTEN_PID is its own pid, LISTEN_FDS 1, LISTEN_FDNAMES its
// socket's name.
func TestListenSingleInstanceZeroDowntime(t *testing.T) {
	needRoot(t)
	srv := fd3server(t)
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	dir, file := writeConfig(t, srvConfig(srv, port, "1", ""))
	d := startDaemon(t, dir, file)
	d.running("srv")

	c := startClients(addr, 1, "http")
	defer c.end()
	// waitServed waits until a process other than old answers.
	waitServed := func(what string, old int) int {
		var pid int
		eventually(t, what, 60*time.Second, func() bool {
			pid = d.status()["srv"].Pid
			return pid != 0 && pid != old && c.seen(pid)
		})
		return pid
	}
	pid := waitServed("the first answer", 0)
	for i := range 5 {
		if out, code := d.ctl("restart", "srv"); code != 0 {
			t.Fatalf("restart %d: %s", i, out)
		}
		pid = waitServed(fmt.Sprintf("an answer after restart %d", i+1), pid)
	}
	for i := range 3 {
		c.gate.Lock()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// A dying process may still accept the next connection, and that
		// one nobody can save: the clients wait until it is gone.
		eventually(t, "the killed server gone", 30*time.Second, func() bool { return !alive(pid) })
		c.gate.Unlock()
		pid = waitServed(fmt.Sprintf("an answer after SIGKILL %d", i+1), pid)
	}
	if err := os.WriteFile(file, []byte(srvConfig(srv, port, "2", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	d.ctlOK("reload")
	eventually(t, "version 2 answering", 60*time.Second, func() bool { return c.lastAnswer().version == "2" })
	c.end()
	c.stop = make(chan struct{}) // the deferred end finds nothing to stop
	t.Logf("%d requests answered by %d server processes; %d failed", c.ok, len(c.pids), len(c.failures))
	if len(c.failures) > 0 {
		t.Errorf("%d requests failed, first: %s", len(c.failures), c.failures[0])
	}
	if len(c.pids) < 6 {
		t.Errorf("%d distinct server pids answered, want at least 6", len(c.pids))
	}
	if len(c.bad) > 0 {
		t.Errorf("wrong socket-activation variables: %q", c.bad[0])
	}
}

// Two instances share the socket (the kernel spreads the accepts): a
// rolling restart, with no proxy in front, fails no request.
func TestListenRollingTwoInstances(t *testing.T) {
	needRoot(t)
	srv := fd3server(t)
	port := freePort(t)
	dir, file := writeConfig(t, srvConfig(srv, port, "1", "")+"\n")
	cfg := strings.Replace(srvConfig(srv, port, "1", ""), `stop_signal = "TERM"`, "stop_signal = \"TERM\"\ninstances = 2", 1)
	os.WriteFile(file, []byte(cfg), 0o644)
	d := startDaemon(t, dir, file)
	d.running("srv:0", "srv:1")
	c := startClients(fmt.Sprintf("127.0.0.1:%d", port), 4, "http")
	defer c.end()
	eventually(t, "both first instances answering", 60*time.Second, func() bool {
		st := d.status()
		return c.seen(st["srv:0"].Pid) && c.seen(st["srv:1"].Pid)
	})
	for i := range 3 {
		before := d.status()
		if out, code := d.ctl("restart", "srv"); code != 0 {
			t.Fatalf("restart %d: %s", i, out)
		}
		eventually(t, "both new instances answering", 60*time.Second, func() bool {
			st := d.status()
			for _, k := range []string{"srv:0", "srv:1"} {
				if st[k].Pid == 0 || st[k].Pid == before[k].Pid || !c.seen(st[k].Pid) {
					return false
				}
			}
			return true
		})
	}
	c.end()
	c.stop = make(chan struct{})
	t.Logf("%d requests answered by %d server processes; %d failed", c.ok, len(c.pids), len(c.failures))
	if len(c.failures) > 0 {
		t.Errorf("%d requests failed, first: %s", len(c.failures), c.failures[0])
	}
	if len(c.pids) < 8 {
		t.Errorf("%d distinct pids answered, want 8 (2 instances, 3 restarts)", len(c.pids))
	}
}

// A program running as nobody serves a privileged port: supervise binds it
// as root and hands it over.
func TestListenNobodyPrivilegedPort(t *testing.T) {
	needRoot(t)
	srv := fd3server(t)
	port := 0
	for p := 900; p < 1000; p++ {
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			ln.Close()
			port = p
			break
		}
	}
	if port == 0 {
		t.Skip("no free port between 900 and 999")
	}
	os.Chmod(srv, 0o755)
	dir, file := writeConfig(t, srvConfig(srv, port, "1", "")+"\n")
	cfg := strings.Replace(srvConfig(srv, port, "1", ""), `stop_signal = "TERM"`, "stop_signal = \"TERM\"\nuser = \"nobody\"\ndir = \"/\"", 1)
	os.WriteFile(file, []byte(cfg), 0o644)
	d := startDaemon(t, dir, file)
	hc := &http.Client{Timeout: 30 * time.Second}
	var body string
	eventually(t, "an answer on the privileged port", 30*time.Second, func() bool {
		b, err := fetch(hc, fmt.Sprintf("http://127.0.0.1:%d/", port))
		body = b
		return err == nil
	})
	a, _ := parseAnswer(body)
	if a.uid != "65534" || a.listenPID != a.pid || a.pid != fmt.Sprint(d.status()["srv"].Pid) {
		t.Errorf("answer %q: want uid 65534 and LISTEN_PID = the program's pid %d", body, d.status()["srv"].Pid)
	}
}

// Bad input: a malformed URL and a world-writable directory at check
// (file:line); an address in use at start; a reload needing an
// impossible bind is refused and the running config keeps serving;
// removing the program closes its socket.
func TestListenBadInput(t *testing.T) {
	needRoot(t)
	srv := fd3server(t)
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	_, file := writeConfig(t, fmt.Sprintf(`
[program.srv]
command = [%q]
listen = ["tcp://localhost:80", "unix://%s/a.sock"]
`, srv, open))
	out, code := runCheck(t, file)
	for _, want := range []string{
		`supervise.toml:4: program.srv.listen[0]: "tcp://localhost:80": "localhost" is not an IP address`,
		`supervise.toml:4: program.srv.listen[1]: the socket's directory ` + open + ` is writable by others`,
	} {
		if code == 0 || !strings.Contains(out, want) {
			t.Errorf("check: exit %d, output:\n%s\nwant %s", code, out, want)
		}
	}

	// A privileged port, checked by a user who could not bind it.
	pub, err := os.MkdirTemp("", "listen-pub-") // t.TempDir's parent is private
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(pub)
	os.Chmod(pub, 0o755)
	privFile := filepath.Join(pub, "supervise.toml")
	os.WriteFile(privFile, []byte("[program.srv]\ncommand = [\"srv\"]\nlisten = [\"tcp://127.0.0.1:80\"]\n"), 0o644)
	check := exec.Command(binary, "check", "-c", privFile)
	check.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	b, err := check.CombinedOutput()
	if want := "supervise.toml:3: program.srv.listen[0]: port 127.0.0.1:80 is privileged: binding it needs root or CAP_NET_BIND_SERVICE"; err == nil || !strings.Contains(string(b), want) {
		t.Errorf("check as nobody: %v\n%s\nwant %s", err, b, want)
	}

	// In use at start: supervise says where, and exits.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	dir, file := writeConfig(t, srvConfig(srv, busyPort, "1", ""))
	d := startDaemon(t, dir, file)
	if code := d.wait(30 * time.Second); code == 0 {
		t.Error("supervise started with its listen address in use")
	}
	if want := fmt.Sprintf("supervise.toml:2: program.srv.listen[0]: binding tcp://127.0.0.1:%d?name=http: address already in use", busyPort); !strings.Contains(d.stderr.String(), want) {
		t.Errorf("stderr:\n%s\nwant %s", tail(d.stderr.String(), 10), want)
	}

	// A reload to an address in use is refused; the old socket serves on.
	port := freePort(t)
	dir, file = writeConfig(t, srvConfig(srv, port, "1", ""))
	d = startDaemon(t, dir, file)
	hc := &http.Client{Timeout: 30 * time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	eventually(t, "an answer", 30*time.Second, func() bool { _, err := fetch(hc, url); return err == nil })
	pid := d.status()["srv"].Pid
	os.WriteFile(file, []byte(srvConfig(srv, busyPort, "2", "")), 0o644)
	out, code = d.ctl("reload")
	if code == 0 || !strings.Contains(out, "address already in use") || !strings.Contains(out, "the running config stays") {
		t.Errorf("reload to a busy port: exit %d, %s", code, out)
	}
	if b, err := fetch(hc, url); err != nil || !strings.Contains(b, "version=1") || d.status()["srv"].Pid != pid {
		t.Errorf("after the refused reload: %q, %v, pid %d (was %d)", b, err, d.status()["srv"].Pid, pid)
	}

	// Removing the program closes its socket.
	os.WriteFile(file, []byte("[program.other]\ncommand = [\"sleep\", \"1000\"]\n"), 0o644)
	d.ctlOK("reload")
	eventually(t, "the socket closed", 30*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
		if err == nil {
			c.Close()
		}
		return errors.Is(err, syscall.ECONNREFUSED)
	})
}

// The dev runner's --hold-ports: a Procfile server that takes its socket
// from LISTEN_FDS keeps answering while --watch restarts it, and a
// connection made during a restart waits instead of being refused.
func TestListenHoldPortsWatch(t *testing.T) {
	needRoot(t)
	srv := fd3server(t)
	port := freePort(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Procfile": "web: " + srv + "\n",
		".env":     "START_DELAY=300ms\n",
		"app.txt":  "0\n",
	})
	r := startDev(t, dir, append(devEnv(t.TempDir()), "NO_COLOR=1"), "--hold-ports", "--watch", "-p", fmt.Sprint(port))
	eventually(t, "web started", 30*time.Second, func() bool { return strings.Contains(r.out.String(), "web | started") })
	c := startClients(fmt.Sprintf("127.0.0.1:%d", port), 1, "web")
	defer c.end()
	pids := func() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.pids) }
	eventually(t, "the first answer", 30*time.Second, func() bool { return pids() == 1 })
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir, "app.txt"), []byte(fmt.Sprint(i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		eventually(t, fmt.Sprintf("an answer after change %d", i+1), 60*time.Second, func() bool { return pids() == i+2 })
	}
	c.end()
	c.stop = make(chan struct{})
	t.Logf("%d requests answered by %d server processes; %d failed", c.ok, len(c.pids), len(c.failures))
	if len(c.failures) > 0 {
		t.Errorf("%d requests failed, first: %s\n%s", len(c.failures), c.failures[0], tail(r.out.String(), 20))
	}
	if len(c.bad) > 0 {
		t.Errorf("wrong socket-activation variables: %q", c.bad[0])
	}
}

// readmeBlock returns the first ```lang block of README.md's
// "Zero-downtime restarts" section.
func readmeBlock(t *testing.T, lang string) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Zero-downtime restarts\n")
	if !ok {
		t.Fatal("README.md has no Zero-downtime restarts section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, code, ok := strings.Cut(sec, "\n```"+lang+"\n")
	if !ok {
		t.Fatalf("no %s example in the section", lang)
	}
	code, _, _ = strings.Cut(code, "\n```\n")
	return code + "\n"
}

// The README's two example servers, run as written: under a client loop,
// three restarts and a SIGKILL (between requests) cost no request.
func TestListenReadmeExamples(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	goSrc := filepath.Join(dir, "server.go")
	if err := os.WriteFile(goSrc, []byte(readmeBlock(t, "go")), 0o644); err != nil {
		t.Fatal(err)
	}
	goBin := filepath.Join(filepath.Dir(binary), "readme-server")
	build := exec.Command("go", "build", "-o", goBin, goSrc)
	build.Dir, build.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the README's Go server: %v\n%s", err, out)
	}
	pySrc := filepath.Join(dir, "server.py")
	if err := os.WriteFile(pySrc, []byte(readmeBlock(t, "python")), 0o644); err != nil {
		t.Fatal(err)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is missing")
	}
	for _, tc := range []struct {
		name string
		argv []string
	}{{"go", []string{goBin}}, {"python", []string{python, pySrc}}} {
		t.Run(tc.name, func(t *testing.T) {
			port := freePort(t)
			argv := fmt.Sprintf("%q", tc.argv[0])
			for _, a := range tc.argv[1:] {
				argv += fmt.Sprintf(", %q", a)
			}
			cdir, file := writeConfig(t, fmt.Sprintf(`
[program.web]
command = [%s]
listen = ["tcp://127.0.0.1:%d"]
stop_signal = "TERM"
[program.web.backoff]
max = "1s"
`, argv, port))
			d := startDaemon(t, cdir, file)
			d.running("web")
			var mu sync.Mutex
			pids := map[string]bool{}
			var failures []string
			stop := make(chan struct{})
			var gate sync.RWMutex
			var wg sync.WaitGroup
			wg.Go(func() {
				hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 60 * time.Second}
				for {
					select {
					case <-stop:
						return
					default:
					}
					gate.RLock()
					body, err := fetch(hc, fmt.Sprintf("http://127.0.0.1:%d/", port))
					gate.RUnlock()
					mu.Lock()
					if err != nil {
						failures = append(failures, err.Error())
					} else if pid, ok := strings.CutPrefix(strings.TrimSpace(body), "hello from "); ok {
						pids[pid] = true
					} else {
						failures = append(failures, "unexpected answer "+body)
					}
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
				}
			})
			served := func(old int) int {
				var pid int
				eventually(t, "a new process answering", 60*time.Second, func() bool {
					pid = d.status()["web"].Pid
					mu.Lock()
					defer mu.Unlock()
					return pid != 0 && pid != old && pids[fmt.Sprint(pid)]
				})
				return pid
			}
			pid := served(0)
			for range 3 {
				d.ctlOK("restart", "web")
				pid = served(pid)
			}
			gate.Lock()
			syscall.Kill(pid, syscall.SIGKILL)
			// A dying process may still accept the next connection, and
			// that one nobody can save: the client waits until it is gone.
			eventually(t, "the killed server gone", 30*time.Second, func() bool { return !alive(pid) })
			gate.Unlock()
			served(pid)
			close(stop)
			wg.Wait()
			t.Logf("%d server processes answered; %d requests failed", len(pids), len(failures))
			if len(failures) > 0 {
				t.Errorf("%d requests failed, first: %s", len(failures), failures[0])
			}
		})
	}
}

// A reload that changes listen binds only what changed: the socket it
// keeps serves throughout (a client loop on it sees no failure while the
// program restarts for its new sockets), the dropped one is closed, the
// new one (a unix socket, with its mode) serves; LISTEN_FDNAMES follows.
func TestListenReloadChangesOnlyWhatChanged(t *testing.T) {
	needRoot(t)
	srv := fd3server(t)
	kept, dropped := freePort(t), freePort(t)
	cfgText := func(second string) string {
		return fmt.Sprintf(`
[program.srv]
command = [%q]
listen = ["tcp://127.0.0.1:%d?name=http", %q]
env = { START_DELAY = "300ms" }
stop_signal = "TERM"
`, srv, kept, second)
	}
	dir, file := writeConfig(t, cfgText(fmt.Sprintf("tcp://127.0.0.1:%d?name=old", dropped)))
	d := startDaemon(t, dir, file)
	d.running("srv")
	c := startClients(fmt.Sprintf("127.0.0.1:%d", kept), 1, "")
	defer c.end()
	eventually(t, "an answer", 30*time.Second, func() bool { return c.lastAnswer().names == "http:old" })
	sock := filepath.Join(dir, "run", "srv.sock")
	os.Mkdir(filepath.Dir(sock), 0o755)
	os.WriteFile(file, []byte(cfgText("unix://"+sock+"?name=admin&mode=0600")), 0o644)
	d.ctlOK("reload")
	eventually(t, "the new process answering", 60*time.Second, func() bool { return c.lastAnswer().names == "http:admin" })
	c.end()
	c.stop = make(chan struct{})
	if len(c.failures) > 0 {
		t.Errorf("%d requests on the kept socket failed, first: %s", len(c.failures), c.failures[0])
	}
	if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", dropped)); err == nil {
		conn.Close()
		t.Error("the dropped socket still accepts")
	}
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("unix socket: %v, %v", fi, err)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}, Timeout: 30 * time.Second}
	if body, err := fetch(hc, "http://srv/"); err != nil || !strings.Contains(body, "names=http:admin") {
		t.Errorf("through the unix socket: %q, %v", body, err)
	}
	// Removing the program removes its unix socket's file.
	os.WriteFile(file, []byte("[program.other]\ncommand = [\"sleep\", \"1000\"]\n"), 0o644)
	d.ctlOK("reload")
	eventually(t, "the socket file removed", 30*time.Second, func() bool { _, err := os.Lstat(sock); return os.IsNotExist(err) })
}
