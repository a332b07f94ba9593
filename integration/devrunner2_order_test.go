package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A process's stdout and stderr reach the dev runner's console in the
// order it wrote them, as with foreman: 1,000 alternating lines, 20 runs.
func TestDevRunnerKeepsStdoutStderrOrder(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Procfile": "mix: i=0; while [ $i -lt 500 ]; do echo \"out $i\"; echo \"err $i\" >&2; i=$((i+1)); done\n",
	})
	env := append(devEnv(t.TempDir()), "NO_COLOR=1")
	var want []string
	for i := range 500 {
		want = append(want, fmt.Sprintf("out %d", i), fmt.Sprintf("err %d", i))
	}
	for run := range 20 {
		out, code := runDev(t, dir, env)
		var got []string
		for _, l := range strings.Split(out, "\n") {
			if rest, ok := strings.CutPrefix(l, "mix | "); ok && (strings.HasPrefix(rest, "out ") || strings.HasPrefix(rest, "err ")) {
				got = append(got, rest)
			}
		}
		misplaced := 0
		for i := range want {
			if i >= len(got) || got[i] != want[i] {
				misplaced++
			}
		}
		if code != 0 || misplaced > 0 {
			t.Fatalf("run %d: exit %d, %d of %d lines out of place (%d lines seen)", run, code, misplaced, len(want), len(got))
		}
	}
}

// --tty gives each process a pseudo-terminal, as overmind does: it sees a
// terminal on stdout and stderr, its lines keep their order, and no "\r"
// comes with them.
func TestDevRunnerTty(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Procfile": "mix: [ -t 1 ] && [ -t 2 ] && echo on a terminal; i=0; while [ $i -lt 200 ]; do echo \"out $i\"; echo \"err $i\" >&2; i=$((i+1)); done\n",
	})
	out, code := runDev(t, dir, append(devEnv(t.TempDir()), "NO_COLOR=1"), "--tty")
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "mix | "); ok && (strings.HasPrefix(rest, "out ") || strings.HasPrefix(rest, "err ")) {
			got = append(got, rest)
		}
	}
	var want []string
	for i := range 200 {
		want = append(want, fmt.Sprintf("out %d", i), fmt.Sprintf("err %d", i))
	}
	if code != 0 || !strings.Contains(out, "mix | on a terminal") || strings.Contains(out, "\r") || !slices.Equal(got, want) {
		t.Errorf("--tty: exit %d, %d lines (want %d in order), terminal %v, CR %v:\n%s", code, len(got), len(want),
			strings.Contains(out, "on a terminal"), strings.Contains(out, "\r"), tail(out, 10))
	}
}
