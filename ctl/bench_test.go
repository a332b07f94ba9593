package ctl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// benchBackend has 1,000 programs with every status field filled in, as a
// big supervisor would report them.
func benchBackend() *memBackend {
	var progNames []string
	for i := range 1000 {
		progNames = append(progNames, fmt.Sprintf("program-%04d:%d", i/4, i%4))
	}
	b := newMemBackend(progNames...)
	ready := true
	for i, n := range progNames {
		st := &b.progs[n].status
		st.Ready = &ready
		st.Restarts = i % 7
		st.MemoryBytes = int64(i) << 20
		st.CPUSeconds = float64(i) * 1.25
		st.LastExit = &ExitInfo{Code: 1, Reason: "Error", FinishedAt: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
		if i%10 == 0 {
			st.State, st.Pid, st.StartedAt, st.NextStartInMs = "CrashLoopBackOff", 0, nil, 40000
			st.Message = "back-off 40s restarting failed program"
		}
	}
	return b
}

// BenchmarkStatusJSON measures `status --json` with 1,000 programs through
// the real socket. in-process-raw is one client's round trip printing the
// server's array as is (what supervisectl does); in-process-decoded also
// decodes and re-encodes it; supervisectl runs the real binary (built from
// cmd/supervise) once per sample, as a script would; fresh-process does
// the same with the test binary as the client, for when cmd/supervise
// does not build. Median and p99 are reported in ms.
func BenchmarkStatusJSON(b *testing.B) {
	ts := startServer(b, benchBackend(), "", nil)
	bin, why := supervisectlBinary(b)

	b.Run("in-process-raw", func(b *testing.B) {
		c := newClient(b, ts.path)
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			t0 := time.Now()
			raw, err := c.StatusJSON(context.Background(), nil)
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriter(io.Discard)
			w.Write(raw)
			w.WriteByte('\n')
			w.Flush()
			lat = append(lat, time.Since(t0))
		}
		report(b, lat)
	})

	b.Run("in-process-decoded", func(b *testing.B) {
		c := newClient(b, ts.path)
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			t0 := time.Now()
			st, err := c.Status(context.Background(), nil)
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriter(io.Discard)
			if err := json.NewEncoder(w).Encode(st); err != nil {
				b.Fatal(err)
			}
			w.Flush()
			lat = append(lat, time.Since(t0))
			if len(st) != 1000 {
				b.Fatalf("%d programs", len(st))
			}
		}
		report(b, lat)
	})

	b.Run("supervisectl", func(b *testing.B) {
		if bin == "" {
			b.Skip(why)
		}
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			cmd := exec.Command(bin, "--socket", ts.path, "status", "--json")
			t0 := time.Now()
			out, err := cmd.Output()
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatalf("supervisectl: %v", err)
			}
			var st []ProgramStatus
			if err := json.Unmarshal(out, &st); err != nil || len(st) != 1000 {
				b.Fatalf("supervisectl printed %d programs, %v", len(st), err)
			}
		}
		report(b, lat)
	})

	// The floor under the figure above: the same process start, with a
	// socket nobody listens on (exit 3 at the first connect).
	b.Run("supervisectl-unreachable", func(b *testing.B) {
		if bin == "" {
			b.Skip(why)
		}
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			cmd := exec.Command(bin, "--socket", ts.path+".none", "status", "--json")
			t0 := time.Now()
			err := cmd.Run()
			lat = append(lat, time.Since(t0))
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				b.Fatalf("supervisectl on a missing socket: %v, want exit 3", err)
			}
		}
		report(b, lat)
	})

	b.Run("fresh-process", func(b *testing.B) {
		self, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			cmd := exec.Command(self)
			cmd.Env = []string{helperEnv + "=status-json", "CTL_TEST_SOCKET=" + ts.path}
			t0 := time.Now()
			out, err := cmd.Output()
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatalf("client process: %v", err)
			}
			var st []ProgramStatus
			if err := json.Unmarshal(out, &st); err != nil || len(st) != 1000 {
				b.Fatalf("client printed %d programs, %v", len(st), err)
			}
		}
		report(b, lat)
	})
}

func report(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	median, p99 := lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	b.ReportMetric(ms(median), "median-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.Logf("%d samples: median %.2f ms, p99 %.2f ms", len(lat), ms(median), ms(p99))
}

// supervisectlBinary builds cmd/supervise and links supervisectl to it;
// $CTL_BENCH_SUPERVISECTL names a ready binary instead. Without a binary it
// says why.
func supervisectlBinary(b *testing.B) (bin, why string) {
	if bin := os.Getenv("CTL_BENCH_SUPERVISECTL"); bin != "" {
		return bin, ""
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", "no go command to build supervisectl"
	}
	dir := b.TempDir()
	build := exec.Command(goBin, "build", "-o", filepath.Join(dir, "supervise"), "../cmd/supervise")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("cmd/supervise does not build: %v\n%s", err, out)
	}
	link := filepath.Join(dir, "supervisectl")
	if err := os.Symlink("supervise", link); err != nil {
		b.Fatal(err)
	}
	return link, ""
}
