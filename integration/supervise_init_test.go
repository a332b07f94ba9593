package integration

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// supervise-init is `supervise exec` in a binary of its own: the same
// code, so these check that it is wired the same way — exit codes,
// signals to the group, the sandbox's re-executed init, help and usage.
func TestSuperviseInitIsExec(t *testing.T) {
	for _, m := range initModes {
		t.Run(m.name, func(t *testing.T) {
			m.skip(t)
			start := func(args ...string) *initRun {
				argv := append([]string{initBinary}, args...)
				if m.pid1 {
					argv = append([]string{"unshare", "--pid", "--fork", "--mount-proc"}, argv...)
				}
				return startInitArgv(t, m, nil, nil, argv...)
			}
			if code, _ := start("--", "sh", "-c", "kill -TERM $$").wait(60 * time.Second); code != 143 {
				t.Errorf("killed by SIGTERM: exit %d, want 143", code)
			}
			r := start("--", "no-such-command-here")
			if code, _ := r.wait(60 * time.Second); code != 127 || !strings.Contains(r.stderr.String(), "executable file not found") {
				t.Errorf("not found: exit %d, %q", code, r.stderr)
			}

			dir := t.TempDir()
			log := filepath.Join(dir, "log")
			r = start("--", "sh", "-c", signalScript(dir))
			waitLine(t, log, "child ready")
			waitLine(t, log, "grandchild ready")
			r.usr1ThenStop(dir)
		})
	}
	t.Run("sandbox", func(t *testing.T) {
		needRoot(t)
		// A pid namespace: the init inside is supervise-init again.
		out, err := exec.Command(initBinary, "--ns", "pid", "--pids-max", "64", "--", "sh", "-c", "echo $$; exit 3").CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("exit: %v\n%s", err, out)
		}
		if pid := strings.TrimSpace(string(out)); len(pid) > 3 {
			t.Errorf("the command's pid %s: not in a new pid namespace", pid)
		}
	})
	t.Run("help and usage", func(t *testing.T) {
		out, err := exec.Command(initBinary, "--help").Output()
		if err != nil || !strings.Contains(string(out), "Usage: supervise-init [flags] -- CMD") || !strings.Contains(string(out), "--single-child") {
			t.Errorf("--help: %v\n%s", err, out)
		}
		out, err = exec.Command(initBinary, "--bogus", "--", "true").CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "-bogus") {
			t.Errorf("--bogus: %v\n%s", err, out)
		}
	})
}

// BenchmarkInitStages runs `INIT -- /bin/true` b.N times and reports the
// median of each stage of the init's start-up, counted from just before
// the fork (SUPERVISE_INIT_TRACE): exec and the Go runtime up to Run
// ("run"), the signal handlers ("signals"), the command forked and exec'd
// ("spawned"), its exit reaped ("done"), and the whole wall time. tini
// (when installed) gives the wall time to compare with.
//
//	go test -run XXX -bench InitStages ./integration
func BenchmarkInitStages(b *testing.B) {
	trueBin, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true")
	}
	for _, c := range []struct {
		name string
		argv []string
	}{
		{"supervise-init", []string{initBinary, "--"}},
		{"supervise-exec", []string{binary, "exec", "--"}},
		{"tini", []string{"tini", "-s", "--"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			if _, err := exec.LookPath(c.argv[0]); err != nil {
				b.Skipf("%s is not installed", c.argv[0])
			}
			stages := map[string][]float64{}
			for range b.N {
				cmd := exec.Command(c.argv[0], append(c.argv[1:], trueBin)...)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				t0 := time.Now()
				cmd.Env = append(os.Environ(), "SUPERVISE_INIT_TRACE="+strconv.FormatInt(t0.UnixNano(), 10))
				if err := cmd.Run(); err != nil {
					b.Fatalf("%v: %v\n%s", c.argv, err, stderr.String())
				}
				stages["wall"] = append(stages["wall"], float64(time.Since(t0).Nanoseconds())/1e6)
				for _, l := range strings.Split(stderr.String(), "\n") {
					f := strings.Fields(l)
					if len(f) == 3 && f[0] == "init-trace" {
						if v, err := strconv.ParseFloat(f[2], 64); err == nil {
							stages[f[1]] = append(stages[f[1]], v)
						}
					}
				}
			}
			for name, v := range stages {
				slices.Sort(v)
				b.ReportMetric(v[len(v)/2], "ms-"+name)
			}
			b.ReportMetric(0, "ns/op") // the stages say it; ns/op would repeat the wall time
		})
	}
}
