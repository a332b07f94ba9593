package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/internal/promcheck"
)

type fakeSource struct {
	mu      sync.Mutex
	snap    Snapshot
	healthy error
	runs    map[string]Run
	logs    map[string][]LogLine
}

func (f *fakeSource) Snapshot() Snapshot { f.mu.Lock(); defer f.mu.Unlock(); return f.snap }
func (f *fakeSource) Healthy() error     { f.mu.Lock(); defer f.mu.Unlock(); return f.healthy }
func (f *fakeSource) Runs() map[string]Run {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs
}
func (f *fakeSource) LogTail(name string, n int) ([]LogLine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lines, ok := f.logs[name]
	if !ok {
		return nil, fmt.Errorf("unknown program %q", name)
	}
	return lines[max(len(lines)-n, 0):], nil
}

var states = []string{"Stopped", "Starting", "Running", "Completed", "CrashLoopBackOff"}

func hist(counts ...uint64) Histogram {
	h := Histogram{Bounds: []time.Duration{time.Millisecond, time.Second}, Counts: counts}
	for _, c := range counts {
		h.Count += c
	}
	h.Sum = 1500 * time.Millisecond
	return h
}

func sampleSnapshot(n int) Snapshot {
	s := Snapshot{States: states, Reloads: 2, ReloadFailures: 1,
		Queue: Queue{Name: "programs", Depth: 3, Adds: 10, Retries: 4, LongestRunning: time.Second,
			QueueTime: hist(1, 2, 3), WorkTime: hist(0, 0, 1)}}
	start := time.Unix(1700000000, 500e6)
	for i := range n {
		name := fmt.Sprintf("p%04d", i)
		p := Program{Name: name, Program: name, Instance: "0", State: "Running", Ready: true, Up: true, Autostart: true,
			Restarts: i, StartedAt: start, Stats: true, MemoryBytes: 1 << 20, CPUSeconds: 0.25, OOMKills: 1,
			LastExit: &Exit{Code: 1, Reason: "Error"},
			Probes:   []Probe{{Kind: "readiness", OK: true, Duration: 3 * time.Millisecond}}}
		s.Programs = append(s.Programs, p)
	}
	return s
}

func scrape(t *testing.T, h http.Handler, method, target string) (int, string, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec.Code, rec.Body.String(), rec.Header()
}

func TestMetricsExposition(t *testing.T) {
	src := &fakeSource{snap: sampleSnapshot(2)}
	src.snap.Programs[1].Program = "we\"ird\\name\n"
	src.snap.Programs[1].Instance = "1"
	src.snap.Programs[1].StartedAt = time.Time{}
	src.snap.Programs[1].LastExit = nil
	src.snap.Programs[1].Stats = false
	// p0000 is a scheduled program; the other is not.
	src.snap.Programs[0].Scheduled = true
	src.snap.Programs[0].LastSuccess = time.Unix(1700000100, 0)
	src.snap.Programs[0].NextRun = time.Unix(1700000400, 0)
	code, body, hdr := scrape(t, NewHandler(src, Build{Version: "v1.2.3", GoVersion: "go1.26"}), "GET", "/metrics")
	if code != 200 || hdr.Get("Content-Type") != ContentType {
		t.Fatalf("GET /metrics: %d %q", code, hdr.Get("Content-Type"))
	}
	for _, want := range []string{
		`supervise_build_info{version="v1.2.3",goversion="go1.26"} 1`,
		`supervise_program_state{program="p0000",instance="0",state="Running"} 1`,
		`supervise_program_state{program="p0000",instance="0",state="Stopped"} 0`,
		`supervise_program_state{program="we\"ird\\name\n",instance="1",state="Running"} 1`,
		`supervise_program_restarts_total{program="we\"ird\\name\n",instance="1"} 1`,
		`supervise_program_start_time_seconds{program="p0000",instance="0"} 1.7000000005e+09`,
		`supervise_program_last_exit_code{program="p0000",instance="0"} 1`,
		`supervise_program_last_exit_reason{program="p0000",instance="0",reason="Error"} 1`,
		`supervise_program_memory_bytes{program="p0000",instance="0"} 1.048576e+06`,
		`supervise_program_cpu_seconds_total{program="p0000",instance="0"} 0.25`,
		`supervise_program_oom_kills_total{program="p0000",instance="0"} 1`,
		`supervise_program_probe_success{program="p0000",instance="0",probe="readiness"} 1`,
		`supervise_program_probe_duration_seconds{program="p0000",instance="0",probe="readiness"} 0.003`,
		`supervise_program_last_success_time_seconds{program="p0000",instance="0"} 1.7000001e+09`,
		`supervise_program_next_run_time_seconds{program="p0000",instance="0"} 1.7000004e+09`,
		`workqueue_depth{name="programs"} 3`,
		`workqueue_adds_total{name="programs"} 10`,
		`workqueue_retries_total{name="programs"} 4`,
		`workqueue_queue_duration_seconds_bucket{name="programs",le="0.001"} 1`,
		`workqueue_queue_duration_seconds_bucket{name="programs",le="1"} 3`,
		`workqueue_queue_duration_seconds_bucket{name="programs",le="+Inf"} 6`,
		`workqueue_queue_duration_seconds_sum{name="programs"} 1.5`,
		`workqueue_queue_duration_seconds_count{name="programs"} 6`,
		`workqueue_longest_running_processor_seconds{name="programs"} 1`,
		`supervise_reloads_total{result="ok"} 2`,
		`supervise_reloads_total{result="failed"} 1`,
		"\ngo_goroutines ",
		"\nprocess_resident_memory_bytes ",
		"\nprocess_open_fds ",
		"\nprocess_start_time_seconds ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
	// Absent figures are absent, not 0.
	for _, not := range []string{
		`supervise_program_start_time_seconds{program="we`,
		`supervise_program_last_exit_code{program="we`,
		`supervise_program_memory_bytes{program="we`,
		`supervise_program_next_run_time_seconds{program="we`,
		`supervise_program_last_success_time_seconds{program="we`,
	} {
		if strings.Contains(body, not) {
			t.Errorf("%s… present, want absent", not)
		}
	}
	promtool(t, body)
}

// promtool checks the exposition as Prometheus reads it, naming
// conventions included.
func promtool(t *testing.T, body string) {
	t.Helper()
	if err := promcheck.Check(body); err != nil {
		t.Fatal(err)
	}
}

func TestPromtoolCatchesABadExposition(t *testing.T) {
	// promtool, as used above, does fail: a counter without _total.
	err := promcheck.Check("# HELP x_restarts Restarts.\n# TYPE x_restarts counter\nx_restarts 1\n")
	if err == nil || errors.Is(err, promcheck.ErrMissing) {
		t.Fatalf("promtool on a counter without _total: %v", err)
	}
}

func TestHealthz(t *testing.T) {
	src := &fakeSource{}
	h := NewHandler(src, Build{})
	if code, body, _ := scrape(t, h, "GET", "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("healthy: %d %q", code, body)
	}
	src.healthy = errors.New("a worker has held web for 2m0s")
	if code, body, _ := scrape(t, h, "GET", "/healthz"); code != 503 || !strings.Contains(body, "web for 2m0s") {
		t.Errorf("stuck: %d %q", code, body)
	}
}

func TestReadyz(t *testing.T) {
	src := &fakeSource{snap: sampleSnapshot(3)}
	src.snap.Programs[2].Autostart = false
	src.snap.Programs[2].Up = false
	src.snap.Programs[2].State = "Stopped"
	h := NewHandler(src, Build{})
	if code, body, _ := scrape(t, h, "GET", "/readyz"); code != 200 || body != "ok\n" {
		t.Errorf("all autostart up: %d %q", code, body)
	}
	if code, _, _ := scrape(t, h, "GET", "/readyz?program=p0002"); code != 503 {
		t.Errorf("a named program not up: %d", code)
	}
	if code, body, _ := scrape(t, h, "GET", "/readyz?program=nope"); code != 404 || !strings.Contains(body, `no program "nope"`) {
		t.Errorf("unknown program: %d %q", code, body)
	}
	src.snap.Programs[0].Up = false
	src.snap.Programs[0].State = "Starting"
	code, body, _ := scrape(t, h, "GET", "/readyz")
	if code != 503 || !strings.Contains(body, "not ready: p0000 (Starting)") || strings.Contains(body, "p0002") {
		t.Errorf("one not up: %d %q", code, body)
	}
	if code, _, _ := scrape(t, h, "GET", "/readyz?program=p0001"); code != 200 {
		t.Errorf("the other named: %d", code)
	}
	// An instance of a program of several is named, and asked for, so.
	src.snap.Programs = append(src.snap.Programs, Program{Name: "web:1", Program: "web", Instance: "1", State: "Running", Autostart: true})
	if code, body, _ := scrape(t, h, "GET", "/readyz?program=web:1"); code != 503 || !strings.Contains(body, "web:1 (Running)") {
		t.Errorf("an instance named: %d %q", code, body)
	}
	if code, _, _ := scrape(t, h, "GET", "/readyz?program=web:0"); code != 404 {
		t.Errorf("an instance that is not there: %d", code)
	}
	// A program scaled to 0 is known, and nothing of it is not ready.
	src.snap.Empty = []string{"idle"}
	if code, _, _ := scrape(t, h, "GET", "/readyz?program=idle"); code != 200 {
		t.Errorf("a program of no instance: %d", code)
	}
	// A long list is cut.
	src.snap = sampleSnapshot(100)
	for i := range src.snap.Programs {
		src.snap.Programs[i].Up = false
	}
	_, body, _ = scrape(t, h, "GET", "/readyz")
	if !strings.Contains(body, "and 80 more") || len(body) > 1000 {
		t.Errorf("long list: %q", body)
	}
}

func TestReadOnlyAndKnownPathsOnly(t *testing.T) {
	h := NewHandler(&fakeSource{snap: sampleSnapshot(1)}, Build{})
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"POST", "/metrics", 405},
		{"PUT", "/healthz", 405},
		{"DELETE", "/readyz", 405},
		{"POST", "/", 405},
		{"GET", "/restart", 404},
		{"POST", "/v1/restart", 404}, // no token file: no control verb
		{"POST", "/stop", 404},
		{"GET", "/metrics/../healthz", 404},
		{"HEAD", "/metrics", 200},
	} {
		code, _, hdr := scrape(t, h, tc.method, tc.path)
		if code != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, code, tc.code)
		}
		if code == 405 && hdr.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", tc.method, tc.path, hdr.Get("Allow"))
		}
	}
}

func TestServerRefusesHugeHeadersAndServesOn(t *testing.T) {
	srv, err := Listen("127.0.0.1:0", NewHandler(&fakeSource{snap: sampleSnapshot(1)}, Build{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextWithCancel(t)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	url := "http://" + srv.Addr().String()
	req, _ := http.NewRequest("GET", url+"/metrics", nil)
	req.Header.Set("X-Big", strings.Repeat("x", 1<<20))
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("1 MiB header: %d", resp.StatusCode)
		}
	}
	resp, err = http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok\n" {
		t.Errorf("after: %d %q", resp.StatusCode, b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func BenchmarkScrape1000(b *testing.B) {
	h := NewHandler(&fakeSource{snap: sampleSnapshot(1000)}, Build{})
	req := httptest.NewRequest("GET", "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
	}
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx, cancel
}
