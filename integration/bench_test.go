package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Figures of the supervisor itself, printed, never asserted. They run only
// with SUPERVISE_BENCH=1:
//
//	SUPERVISE_BENCH=1 go test ./integration -run Bench -v

func benchOnly(t *testing.T) {
	if os.Getenv("SUPERVISE_BENCH") == "" {
		t.Skip("a benchmark: set SUPERVISE_BENCH=1")
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

// procStat returns utime+stime and the voluntary+involuntary context
// switches of pid.
func procStat(t *testing.T, pid int) (cpu time.Duration, ctxsw int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	cpu = time.Duration(ut+st) * time.Second / 100
	s, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(s), "\n") {
		if strings.HasSuffix(strings.Fields(l + " x")[0], "ctxt_switches:") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			ctxsw += n
		}
	}
	return cpu, ctxsw
}

func rssKiB(t *testing.T, pid int) int {
	s, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(s), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			return n
		}
	}
	return 0
}

func TestBenchCrashToRestart(t *testing.T) {
	benchOnly(t)
	const n = 200
	dir, file := writeConfig(t, fmt.Sprintf(`
[program.crash]
# bash's $EPOCHREALTIME and mapfile need no fork: the gap between two lines is the
# exit → reap → restart → exec → first instruction of the shell.
command = ["bash", "-c", "echo $EPOCHREALTIME >> t; mapfile -t a < t; [ ${#a[@]} -ge %d ] && exec sleep 1000; exit 1"]
[program.crash.backoff]
initial = "0s"
`, n+1))
	d := startDaemon(t, dir, file)
	eventually(t, "all restarts", 2*time.Minute, func() bool { return len(readLines(t, filepath.Join(dir, "t"))) > n })
	var ts []time.Time
	for _, l := range readLines(t, filepath.Join(dir, "t")) {
		f, _ := strconv.ParseFloat(strings.Replace(l, ",", ".", 1), 64)
		ts = append(ts, time.Unix(0, int64(f*1e9)))
	}
	var gaps []time.Duration
	for i := 1; i < len(ts); i++ {
		gaps = append(gaps, ts[i].Sub(ts[i-1]))
	}
	// The supervisor's own reaction, from its events: Exited → Running.
	out, _ := d.ctl("events", "--json")
	var exited time.Time
	var react []time.Duration
	for _, l := range strings.Split(out, "\n") {
		var ev struct {
			Time     time.Time
			From, To string
		}
		if json.Unmarshal([]byte(l), &ev) != nil {
			continue
		}
		switch ev.To {
		case "Exited":
			exited = ev.Time
		case "Running":
			if !exited.IsZero() {
				react = append(react, ev.Time.Sub(exited))
			}
		}
	}
	t.Logf("crash → next start (bash to bash, %d restarts): median %v, p99 %v", len(gaps), percentile(gaps, 0.5), percentile(gaps, 0.99))
	if len(react) > 0 {
		t.Logf("supervisor Exited → Running (its events, %d restarts): median %v, p99 %v", len(react), percentile(react, 0.5), percentile(react, 0.99))
	}
}

func TestBenchThousandPrograms(t *testing.T) {
	benchOnly(t)
	const n = 1000
	var b strings.Builder
	b.WriteString("[supervisor]\nworkers = 2\n")
	for i := range n {
		fmt.Fprintf(&b, "[program.s%04d]\ncommand = [\"sleep\", \"100000\"]\nstop_timeout = \"5s\"\n", i)
	}
	dir, file := writeConfig(t, b.String())
	start := time.Now()
	d := startDaemon(t, dir, file)
	allRunning := func() bool {
		out, code := d.ctl("status", "--json")
		if code != 0 {
			return false
		}
		var list []programStatus
		if json.Unmarshal([]byte(out), &list) != nil {
			return false
		}
		for _, p := range list {
			if p.State != "Running" {
				return false
			}
		}
		return len(list) == n
	}
	eventually(t, "1000 running", 5*time.Minute, allRunning)
	// The exact time: the last Running event.
	out, _ := d.ctl("events", "--json")
	var last time.Time
	for _, l := range strings.Split(out, "\n") {
		var ev struct {
			Time time.Time
			To   string
		}
		if json.Unmarshal([]byte(l), &ev) == nil && ev.To == "Running" && ev.Time.After(last) {
			last = ev.Time
		}
	}
	pid := d.cmd.Process.Pid
	t.Logf("start of %d sleep programs until all Running: %v (to the last Running event)", n, last.Sub(start).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // let start-up settle before measuring idle
	t.Logf("supervisor RSS with %d programs: %d KiB", n, rssKiB(t, pid))
	cpu0, sw0 := procStat(t, pid)
	time.Sleep(30 * time.Second)
	cpu1, sw1 := procStat(t, pid)
	t.Logf("idle 30 s with %d programs: CPU %v, context switches %d", n, cpu1-cpu0, sw1-sw0)

	// Latency of `supervisectl status --json` with 1,000 programs.
	var lat []time.Duration
	for range 50 {
		t0 := time.Now()
		cmd := d.ctlCmd("status", "--json")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	t.Logf("supervisectl status --json, %d programs, 50 runs: median %v, p99 %v", n, percentile(lat, 0.5), percentile(lat, 0.99))

	t0 := time.Now()
	d.signal(syscall.SIGTERM)
	d.wait(5 * time.Minute)
	t.Logf("stop-all of %d programs (exit on SIGTERM): %v", n, time.Since(t0).Round(time.Millisecond))
}

func TestBenchLogThroughput(t *testing.T) {
	benchOnly(t)
	const lines = 2_000_000 // 100-byte lines: 200 MB
	dir, file := writeConfig(t, fmt.Sprintf(`
[program.spew]
command = ["sh", "-c", "yes %s | head -n %d"]
restart = "never"
stdout = { console = false, file = "spew.log", max_size = "1GiB" }
`, strings.Repeat("x", 99), lines))
	t0 := time.Now()
	d := startDaemon(t, dir, file)
	d.wait(5 * time.Minute)
	took := time.Since(t0)
	got := len(readLines(t, filepath.Join(dir, "spew.log")))
	t.Logf("log capture, one program, %d lines of 100 bytes to a file: %.0f MB/s, %d lines lost", lines, float64(lines*100)/took.Seconds()/1e6, lines-got)
}
