package integration

import (
	"encoding/json"
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

// webapp is testdata/webapp, the small HTTP server of the rollout tests.
var webapp = testdataProgram("webapp")

// freePorts finds n consecutive free TCP ports on 127.0.0.1 (the first is
// returned), as webapp's instances listen on BASE_PORT+N.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		ok := base+n < 65536
		for i := 1; ok && i < n; i++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free ports")
	return 0
}

// webConfig is a program of two webapp instances with a readiness probe.
func webConfig(t *testing.T, version string, base int, extra string) string {
	t.Helper()
	app := webapp(t)
	return fmt.Sprintf(`
[program.web]
command = [%q]
instances = 2
env = { BASE_PORT = "%d", VERSION = %q, START_DELAY = "200ms" }
stop_signal = "TERM"
[program.web.probes.readiness]
command = [%q, "check"]
period = "100ms"
%s`, app, base, version, app, extra)
}

// startWeb runs webConfig under supervise and waits until both instances
// are ready.
func startWeb(t *testing.T, base int, extra string) (d *daemon, dir, file string) {
	t.Helper()
	dir, file = writeConfig(t, webConfig(t, "1", base, extra))
	d = startDaemon(t, dir, file)
	eventually(t, "both instances ready", 30*time.Second, func() bool {
		st := d.healthStatus()
		return isReady(st["web:0"]) && isReady(st["web:1"])
	})
	return d, dir, file
}

// sampler reads the status every 30 ms until stopped and keeps the least
// number of ready web instances it saw.
type sampler struct {
	minReady atomic.Int64
	samples  atomic.Int64
	stop     chan struct{}
	done     chan struct{}
}

func startSampler(d *daemon) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	s.minReady.Store(1 << 30)
	ctl := ctlBinary
	go func() {
		defer close(s.done)
		tick := time.NewTicker(30 * time.Millisecond)
		defer tick.Stop()
		for {
			out, err := exec.Command(ctl, "--socket", d.socket, "status", "--json").Output()
			if err == nil {
				var list []healthStatus
				if json.Unmarshal(out, &list) == nil {
					n := int64(0)
					for _, p := range list {
						if strings.HasPrefix(p.Name, "web:") && isReady(p) {
							n++
						}
					}
					s.samples.Add(1)
					if n < s.minReady.Load() {
						s.minReady.Store(n)
					}
				}
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) end() (minReady, samples int64) {
	close(s.stop)
	<-s.done
	return s.minReady.Load(), s.samples.Load()
}

// During `supervisectl restart web` (two instances with a readiness probe),
// status sampled every 30 ms never shows fewer than one ready instance;
// both pids change; when the command returns both new instances are ready.
func TestRollingRestartKeepsOneReady(t *testing.T) {
	d, _, _ := startWeb(t, freePorts(t, 2), "")
	before := d.healthStatus()
	s := startSampler(d)
	out, code := d.ctl("restart", "web")
	minReady, samples := s.end()
	if code != 0 {
		t.Fatalf("restart: exit %d: %s", code, out)
	}
	after := d.healthStatus()
	for _, k := range []string{"web:0", "web:1"} {
		if !isReady(after[k]) {
			t.Errorf("%s not ready when restart returned: %+v", k, after[k])
		}
		if after[k].Pid == before[k].Pid || after[k].Pid == 0 {
			t.Errorf("%s kept pid %d", k, before[k].Pid)
		}
	}
	t.Logf("%d status samples during the restart; fewest ready: %d", samples, minReady)
	if samples == 0 || minReady < 1 {
		t.Fatalf("ready instances dropped to %d during the rolling restart (%d samples)", minReady, samples)
	}
}

// scale web=3 then web=1: instances 0..2, then 0 only, the surplus ones
// stopped with their pre_stop hook, highest first.
func TestScaleWithTheBinary(t *testing.T) {
	d, dir, _ := startWeb(t, freePorts(t, 3), `
[program.web.hooks.pre_stop]
command = ["sh", "-c", "echo $SUPERVISE_INSTANCE >> stopped"]
`)
	pid0 := d.healthStatus()["web:0"].Pid
	out, code := d.ctl("scale", "--json", "web=3")
	var rep struct {
		OK        bool `json:"ok"`
		Instances []struct {
			Name      string `json:"name"`
			PidBefore int    `json:"pid_before"`
			Pid       int    `json:"pid"`
			Added     bool   `json:"added"`
			Replaced  bool   `json:"replaced"`
			Ready     *bool  `json:"ready"`
		} `json:"instances"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.OK || len(rep.Instances) != 3 {
		t.Fatalf("scale --json web=3: exit %d: %s", code, out)
	}
	for _, in := range rep.Instances {
		added := in.Name == "web:2"
		if in.Added != added || in.Replaced != added || in.Pid == 0 || in.Ready == nil || !*in.Ready {
			t.Errorf("scale --json web=3: %s: %+v", in.Name, in)
		}
	}
	st := d.healthStatus()
	if len(st) != 3 || !isReady(st["web:2"]) {
		t.Fatalf("after scale web=3: %+v", st)
	}
	d.ctlOK("scale", "web=1")
	st = d.healthStatus()
	if len(st) != 1 || st["web:0"].Pid != pid0 {
		t.Fatalf("after scale web=1: %+v (web:0 was pid %d)", st, pid0)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "stopped"))
	if string(got) != "2\n1\n" {
		t.Fatalf("pre_stop ran for %q, want instance 2 then 1", got)
	}
	if out, code := d.ctl("scale", "nope=2"); code == 0 || !strings.Contains(out, `no program "nope"`) && !strings.Contains(out, "nope") {
		t.Fatalf("scale nope=2: exit %d: %s", code, out)
	}
	if out, code := d.ctl("scale", "web"); code != 2 {
		t.Fatalf("scale web: exit %d, want 2 (usage): %s", code, out)
	}
}

// Zero downtime with real software: nginx, under supervise and depending
// on web, in front of two webapp instances that depend on a db; a bounded
// load loop through it during `supervisectl restart web`, a reload that
// changes web's environment, `restart web:0` and `restart db`: no request
// fails (nginx retries a closed upstream: proxy_next_upstream error), as
// neither a restart of one instance nor one of a dependency takes its
// dependents down.
func TestZeroDowntimeBehindNginx(t *testing.T) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx"} {
			if _, serr := os.Stat(p); serr == nil {
				nginx, err = p, nil
			}
		}
	}
	if err != nil {
		t.Skip("nginx is not installed (Debian: apt-get install nginx; scripts/test.sh installs it as root)")
	}
	base := freePorts(t, 3) // two instances, then nginx
	front := base + 2

	ngDir := t.TempDir()
	conf := filepath.Join(ngDir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`
daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	upstream web {
		# max_fails=0: a refused connection is retried on the other
		# instance, never counted against this one.
		server 127.0.0.1:%[2]d max_fails=0;
		server 127.0.0.1:%[3]d max_fails=0;
	}
	server {
		listen 127.0.0.1:%[4]d;
		location / {
			proxy_pass http://web;
			proxy_next_upstream error;
		}
	}
}
`, ngDir, base, base+1, front)), 0o644); err != nil {
		t.Fatal(err)
	}
	stack := fmt.Sprintf(`
[program.web.depends_on]
db = "ready"

[program.db]
command = ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.1; done"]

[program.nginx]
command = [%q, "-c", %q, "-p", %q]
depends_on = ["web"]
[program.nginx.probes.readiness]
tcp = "127.0.0.1:%d"
period = "100ms"
`, nginx, conf, ngDir, front)
	d, _, file := startWeb(t, base, stack)
	nginxPid := d.running("nginx")["nginx"]
	url := fmt.Sprintf("http://127.0.0.1:%d/", front)
	client := &http.Client{Timeout: 5 * time.Second}
	get := func() (string, error) {
		resp, err := client.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
		}
		return string(b), err
	}
	eventually(t, "nginx answering", 30*time.Second, func() bool { _, err := get(); return err == nil })

	// load runs a few clients against nginx until during returns, and
	// reports the requests and the failures.
	load := func(during func()) (total, failed int64, firstErr error) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		stop := make(chan struct{})
		var n, bad atomic.Int64
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					n.Add(1)
					if _, err := get(); err != nil {
						bad.Add(1)
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
					}
				}
			})
		}
		during()
		close(stop)
		wg.Wait()
		return n.Load(), bad.Load(), firstErr
	}

	for _, step := range []struct {
		name string
		do   func()
	}{
		{"supervisectl restart web", func() {
			if out, code := d.ctl("restart", "web"); code != 0 {
				t.Errorf("restart: exit %d: %s", code, out)
			}
		}},
		{"a reload that changes web's env", func() {
			before := d.healthStatus()
			if err := os.WriteFile(file, []byte(webConfig(t, "2", base, stack)), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, code := d.ctl("reload"); code != 0 {
				t.Errorf("reload: exit %d: %s", code, out)
			}
			eventually(t, "both instances replaced and ready", 60*time.Second, func() bool {
				st := d.healthStatus()
				return isReady(st["web:0"]) && isReady(st["web:1"]) &&
					st["web:0"].Pid != before["web:0"].Pid && st["web:1"].Pid != before["web:1"].Pid
			})
		}},
		{"supervisectl restart web:0", func() {
			if out, code := d.ctl("restart", "web:0"); code != 0 {
				t.Errorf("restart web:0: exit %d: %s", code, out)
			}
		}},
		{"supervisectl restart db", func() {
			if out, code := d.ctl("restart", "db"); code != 0 {
				t.Errorf("restart db: exit %d: %s", code, out)
			}
			// The load goes on until the whole chain is up again (at once
			// when nothing went down).
			eventually(t, "web ready and nginx running", 60*time.Second, func() bool {
				st := d.healthStatus()
				return isReady(st["web:0"]) && isReady(st["web:1"]) && st["nginx"].State == "Running" && isReady(st["nginx"])
			})
		}},
	} {
		began := time.Now()
		total, failed, firstErr := load(step.do)
		took := time.Since(began)
		fmt.Printf("zero-downtime: %s: took %v; %d requests through nginx, %d failed\n",
			step.name, took.Round(time.Millisecond), total, failed)
		if failed > 0 {
			t.Errorf("%s: %d of %d requests failed (first: %v)", step.name, failed, total, firstErr)
		}
	}
	if body, err := get(); err != nil || !strings.Contains(body, "version 2") {
		t.Errorf("after the reload nginx serves %q (%v), want version 2", body, err)
	}
	if pid := d.running("nginx")["nginx"]; pid != nginxPid {
		t.Errorf("nginx runs pid %d, was %d: it was restarted with what it depends on", pid, nginxPid)
	}
}

// A shutdown runs every program's post_stop to its end before it deletes
// the sandboxes (it cut them off before: the example's web lost its
// post_stop at every shutdown).
func TestShutdownRunsPostStop(t *testing.T) {
	dir, file := writeConfig(t, `
[program.web]
command = ["sleep", "1000"]
[program.web.hooks.post_stop]
command = ["sh", "-c", "sleep 0.2; echo done > post_stop.ran"]
`)
	d := startDaemon(t, dir, file)
	eventually(t, "web running", 30*time.Second, func() bool { return d.healthStatus()["web"].State == "Running" })
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := d.wait(60 * time.Second); code != 0 {
		t.Fatalf("supervise exited %d", code)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "post_stop.ran")); err != nil || string(b) != "done\n" {
		t.Fatalf("post_stop did not run to its end: %q %v\n%s", b, err, d.stderr.String())
	}
}
