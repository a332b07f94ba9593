//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary plays the helper when HELPER_UNDER_TEST is set.
func TestMain(m *testing.M) {
	if os.Getenv("HELPER_UNDER_TEST") != "" {
		os.Args = append([]string{os.Args[0]}, strings.Fields(os.Getenv("HELPER_UNDER_TEST"))...)
		main()
		return
	}
	os.Exit(m.Run())
}

func helper(args string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "HELPER_UNDER_TEST="+args)
	return cmd
}

func TestCrash(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t")
	for range 2 {
		err := helper("crash " + file).Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("crash: %v, want exit status 1", err)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %q, want s/e lines of two runs", b)
	}
	var prev int64
	for i, l := range lines {
		kind, v, _ := strings.Cut(l, " ")
		ns, err := strconv.ParseInt(v, 10, 64)
		if want := []string{"s", "e"}[i%2]; kind != want || err != nil || ns < prev {
			t.Errorf("line %d = %q: want %s and a time not before the last", i, l, want)
		}
		prev = ns
	}
}

func TestSpew(t *testing.T) {
	timing := filepath.Join(t.TempDir(), "timing")
	cmd := helper("spew 1050 " + timing) // 10 whole lines; the 50 bytes left over are not written
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(timing); err == nil && strings.Contains(string(b), "\nend ") {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("no timing file after 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// It waits to be stopped, as a supervised program would.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	var want strings.Builder
	for i := range 10 {
		fmt.Fprintf(&want, "%010d %s\n", i, strings.Repeat("x", 88))
	}
	if out.String() != want.String() {
		t.Errorf("spew wrote %q, want %q", out.String(), want.String())
	}
}
