package integration

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/internal/promcheck"
)

// httpAddr is the address the daemon's log says it serves HTTP on.
func (d *daemon) httpAddr() string {
	d.t.Helper()
	re := regexp.MustCompile(`msg="supervise running".* http=(\S+)`)
	var addr string
	eventually(d.t, "supervise running with an HTTP address", 60*time.Second, func() bool {
		m := re.FindStringSubmatch(d.stderr.String())
		if m == nil {
			return false
		}
		addr = m[1]
		return true
	})
	return addr
}

// get does one request on a connection of its own.
func get(t *testing.T, method, url string, header map[string]string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricValue is the value of the series line that starts with prefix.
func metricValue(body, prefix string) (float64, bool) {
	for line := range strings.Lines(body) {
		if rest, ok := strings.CutPrefix(line, prefix+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

func TestHTTPMetricsHealthReady(t *testing.T) {
	needRoot(t)
	gate := filepath.Join(t.TempDir(), "gate")
	dir, file := writeConfig(t, fmt.Sprintf(`
[program.web]
command = ["sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done; echo listening; exec sleep 100000"]
ready_log_line = "listening"
[program.crash]
command = ["sh", "-c", "exit 3"]
backoff = { initial = "10ms", max = "20ms" }
ready_log_line = "never printed" # its short runs must not count as ready
[program.mem]
command = ["sleep", "100000"]
sandbox = { memory_max = "64MiB" }
`, gate))
	d := startDaemon(t, dir, file, "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr()

	if code, body := get(t, "GET", base+"/healthz", nil); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	d.running("web")
	if code, body := get(t, "GET", base+"/readyz?program=web", nil); code != 503 || !strings.Contains(body, "web (Running)") {
		t.Fatalf("/readyz?program=web before the ready line: %d %q", code, body)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "/readyz?program=web 200", 60*time.Second, func() bool {
		code, _ := get(t, "GET", base+"/readyz?program=web", nil)
		return code == 200
	})
	// crash never gets ready: the whole is not, and says who.
	if code, body := get(t, "GET", base+"/readyz", nil); code != 503 || !strings.Contains(body, "crash (") || strings.Contains(body, "web (") {
		t.Errorf("/readyz: %d %q", code, body)
	}

	var body string
	eventually(t, "crash restarted 3 times in /metrics", 60*time.Second, func() bool {
		var code int
		code, body = get(t, "GET", base+"/metrics", nil)
		v, ok := metricValue(body, `supervise_program_restarts_total{program="crash",instance="0"}`)
		return code == 200 && ok && v >= 3
	})
	promtoolCheck(t, body)
	if v, ok := metricValue(body, `supervise_program_ready{program="web",instance="0"}`); !ok || v != 1 {
		t.Errorf("web ready gauge %v %v, want 1", v, ok)
	}
	// The cgroup's usage is read through a one-second cache; a scrape may
	// see it before the program's first pages are charged.
	eventually(t, "mem's memory gauge > 0 from its cgroup", 30*time.Second, func() bool {
		_, b := get(t, "GET", base+"/metrics", nil)
		v, ok := metricValue(b, `supervise_program_memory_bytes{program="mem",instance="0"}`)
		return ok && v > 0
	})
	if _, ok := metricValue(body, `workqueue_depth{name="restart-intents"}`); !ok {
		t.Errorf("no workqueue_depth:\n%s", body)
	}
	if v, ok := metricValue(body, `supervise_program_last_exit_code{program="crash",instance="0"}`); !ok || v != 3 {
		t.Errorf("crash last exit code %v %v, want 3", v, ok)
	}

	// Bad requests get errors.
	for _, tc := range []struct {
		method, path string
		header       map[string]string
		code         int
	}{
		{"GET", "/nope", nil, 404},
		{"POST", "/metrics", nil, 405},
		{"POST", "/restart", nil, 404},
		{"GET", "/metrics", map[string]string{"X-Huge": strings.Repeat("h", 1<<20)}, 431},
	} {
		if code, _ := get(t, tc.method, base+tc.path, tc.header); code != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, code, tc.code)
		}
	}
	garbage, err := net.Dial("tcp", d.httpAddr())
	if err != nil {
		t.Fatal(err)
	}
	garbage.Write([]byte("\x00\xff not http at all\r\n\r\n"))
	reply, _ := io.ReadAll(io.LimitReader(garbage, 4096))
	garbage.Close()
	if !bytes.HasPrefix(reply, []byte("HTTP/1.1 400")) {
		t.Errorf("garbage got %q", reply)
	}

	// 2,000 idle connections: the supervisor keeps its descriptors
	// bounded and serves again once the idle ones are timed out, while
	// they are all still open on our side.
	pid := d.cmd.Process.Pid
	fds0 := countFDs(t, pid)
	var idle []net.Conn
	for range 2000 {
		c, err := net.Dial("tcp", d.httpAddr())
		if err != nil {
			t.Fatalf("dial %d: %v", len(idle), err)
		}
		idle = append(idle, c)
	}
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	flooded := time.Now()
	eventually(t, "/healthz served during the flood", 60*time.Second, func() bool {
		code, _ := get(t, "GET", base+"/healthz", nil)
		return code == 200
	})
	n := countFDs(t, pid)
	t.Logf("2000 idle connections: /healthz served again after %v; supervise descriptors %d before, %d during", time.Since(flooded).Round(time.Millisecond), fds0, n)
	if n > fds0+100 {
		t.Errorf("supervise holds %d descriptors during the flood, %d before", n, fds0)
	}
	if _, code := d.ctl("status"); code != 0 {
		t.Errorf("supervisectl status during the flood: exit %d", code)
	}
	if code, body := get(t, "GET", base+"/metrics", nil); code != 200 || !strings.Contains(body, "workqueue_depth") {
		t.Errorf("/metrics during the flood: %d", code)
	}
}

func countFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func promtoolCheck(t *testing.T, body string) {
	t.Helper()
	if err := promcheck.Check(body); err != nil {
		t.Fatal(err)
	}
}
