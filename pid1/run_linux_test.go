package pid1

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exe := write("exe", 0o755)
	plain := write("plain", 0o644)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "plain"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/nonexistent:" + dir}
	cases := []struct {
		file string
		env  []string
		want string
		code int // StartError code, 0 for success
	}{
		{file: "exe", env: env, want: exe},
		{file: exe, env: nil, want: exe},
		{file: "missing", env: env, code: 127},
		{file: filepath.Join(dir, "missing"), env: env, code: 127},
		{file: filepath.Join(exe, "below-a-file"), env: env, code: 127},
		{file: "plain", env: env, code: 126},
		{file: plain, env: env, code: 126},
		{file: "sub", env: env, code: 126},
		{file: dir, env: env, code: 126},
		// A non-executable match is skipped when a later one is runnable.
		{file: "plain", env: []string{"PATH=" + dir + ":" + other}, want: filepath.Join(other, "plain")},
		// The command's PATH, last one wins.
		{file: "exe", env: []string{"PATH=/nonexistent", "PATH=" + dir}, want: exe},
	}
	for _, c := range cases {
		got, err := lookPath(c.file, c.env)
		if c.code == 0 {
			if err != nil || got != c.want {
				t.Errorf("lookPath(%q) = %q, %v; want %q", c.file, got, err, c.want)
			}
			continue
		}
		var se *StartError
		if !errors.As(err, &se) || se.Code != c.code {
			t.Errorf("lookPath(%q) = %q, %v; want a %d StartError", c.file, got, err, c.code)
		}
	}
}

// The tests below run the init in this test process: it becomes a child
// subreaper while Run runs, and it owns the process's waits, so they do not
// run in parallel and nothing else here forks.

func TestRunExitCode(t *testing.T) {
	code, err := Run(t.Context(), Config{Args: []string{"sh", "-c", "exit 3"}})
	if code != 3 || err != nil {
		t.Errorf("Run = %d, %v; want 3", code, err)
	}
	code, err = Run(t.Context(), Config{Args: []string{"sh", "-c", "kill -USR1 $$"}})
	if code != 128+10 || err != nil {
		t.Errorf("Run = %d, %v; want 138", code, err)
	}
	code, err = Run(t.Context(), Config{Args: []string{"supervise-no-such-command"}})
	if code != 127 || err == nil {
		t.Errorf("Run = %d, %v; want 127 and an error", code, err)
	}
}

// TestRunCancelStops: a cancelled context is a stop: the command gets the
// stop signal.
func TestRunCancelStops(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { // cancel once the command said it is ready (its trap is set)
		buf := make([]byte, 16)
		if n, _ := r.Read(buf); n > 0 {
			cancel()
		}
	}()
	code, err := Run(ctx, Config{
		Args:    []string{"sh", "-c", `trap 'exit 9' USR2; echo ready; while :; do sleep 0.05 & wait $!; done`},
		Stdout:  w,
		Restart: RestartAlways, StopSignal: syscall.SIGUSR2,
	})
	w.Close()
	if code != 9 || err != nil {
		t.Errorf("Run = %d, %v; want 9 (no restart after a stop)", code, err)
	}
}

// TestRunGraceZeroKillsAtOnce: a leftover that ignores the stop signal is
// killed at once with a zero grace, and Run returns as soon as it is gone.
func TestRunGraceZeroKillsAtOnce(t *testing.T) {
	start := time.Now()
	code, err := Run(t.Context(), Config{
		Args:  []string{"sh", "-c", `sh -c 'trap "" TERM; exec sleep 1000' & exit 2`},
		Grace: 0,
	})
	if code != 2 || err != nil {
		t.Errorf("Run = %d, %v; want 2", code, err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("Run took %v with a zero grace", took)
	}
	if pids, _ := descendants(); len(pids) != 0 {
		t.Errorf("left behind: %v", pids)
	}
}
