package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// standin stands in for an app's command: it prints what it was started
// with and sees (arguments, PORT, PS, variables of the .env), then
// alternating stdout and stderr lines, then "done", and waits.
const standin = `#!/bin/sh
echo "seen args=[$*] port=$PORT ps=$PS rails_env=${RAILS_ENV-unset} workers=${SIDEKIQ_WORKERS-unset} debug=${RUBY_DEBUG_OPEN-unset}"
i=0
while [ $i -lt 50 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done
echo done
exec sleep 1000
`

// foremanLine is a console line of either runner: foreman's "HH:MM:SS
// web.1  | text", supervise's "web | text".
var foremanLine = regexp.MustCompile(`^(?:\d\d:\d\d:\d\d )?([A-Za-z0-9_-]+?)(?:\.\d+)?\s+\| (.*)$`)

// TestRealProcfilesAgainstForeman runs real projects' Procfiles (their
// commands replaced by a stand-in; testdata/procfiles names each source)
// under foreman and under supervise, and compares per process what it
// was started with, its PORT, PS and env, and the order of its lines.
func TestRealProcfilesAgainstForeman(t *testing.T) {
	foreman, err := exec.LookPath("foreman")
	if err != nil {
		t.Fatal("foreman is missing: apt-get install ruby-foreman (scripts/test.sh does)")
	}
	files, err := filepath.Glob("testdata/procfiles/*")
	if err != nil || len(files) < 5 {
		t.Fatalf("want at least 5 Procfiles in testdata/procfiles: %v, %v", files, err)
	}
	// One more with CRLF line ends, as a Procfile edited on Windows has.
	files = append(files, "testdata/procfiles/discourse.Procfile#crlf")
	for _, src := range files {
		t.Run(filepath.Base(src), func(t *testing.T) {
			file, crlf := strings.CutSuffix(src, "#crlf")
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if crlf {
				text = []byte(strings.ReplaceAll(string(text), "\n", "\r\n"))
			}
			// Its name in the project: Procfile or Procfile.dev.
			name := "Procfile"
			if strings.HasSuffix(file, ".dev") {
				name = "Procfile.dev"
			}
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{
				name:   string(text),
				".env": "RAILS_ENV=development\nSIDEKIQ_WORKERS=2\n",
			})
			if err := os.WriteFile(filepath.Join(dir, "standin"), []byte(standin), 0o755); err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, l := range strings.Split(string(text), "\n") {
				if n, _, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "#") {
					types = append(types, strings.TrimSpace(n))
				}
			}
			// No PORT from the shell: foreman takes an empty one as 0.
			// A short runtime folder: a subtest's TempDir is too long a
			// path for a socket.
			rt, err := os.MkdirTemp("", "rt")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(rt) })
			env := slices.DeleteFunc(append(devEnv(rt), "NO_COLOR=1"), func(kv string) bool { return strings.HasPrefix(kv, "PORT=") })
			theirs := runUntilDone(t, dir, env, types, foreman, "start", "-f", name)
			ours := runUntilDone(t, dir, env, types, binary, "-f", name)
			for _, p := range types {
				if !slices.Equal(ours[p], theirs[p]) {
					t.Errorf("%s: supervise and foreman differ:\nsupervise: %q\nforeman:   %q", p, head(ours[p], 6), head(theirs[p], 6))
				}
			}
			if len(ours) != len(theirs) {
				t.Errorf("processes: supervise %d, foreman %d", len(ours), len(theirs))
			}
		})
	}
}

func head(s []string, n int) []string { return s[:min(n, len(s))] }

// runUntilDone runs argv in dir until every process type has printed
// "done", stops it with SIGTERM, and returns each process's stand-in lines.
func runUntilDone(t *testing.T, dir string, env, types []string, argv ...string) map[string][]string {
	t.Helper()
	r := startRunner(t, dir, env, argv...)
	defer func() {
		r.cmd.Process.Signal(syscall.SIGTERM)
		r.wait(30 * time.Second)
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL) // stragglers of a runner that left them
	}()
	lines := func() map[string][]string {
		m := map[string][]string{}
		for _, l := range strings.Split(r.out.String(), "\n") {
			if g := foremanLine.FindStringSubmatch(strings.TrimRight(l, "\r")); g != nil {
				if text := g[2]; strings.HasPrefix(text, "seen ") || strings.HasPrefix(text, "out ") || strings.HasPrefix(text, "err ") || text == "done" {
					m[g[1]] = append(m[g[1]], text)
				}
			}
		}
		return m
	}
	eventually(t, fmt.Sprintf("%s: every process done", filepath.Base(argv[0])), 60*time.Second, func() bool {
		m := lines()
		for _, p := range types {
			if !slices.Contains(m[p], "done") {
				return false
			}
		}
		return true
	})
	return lines()
}
