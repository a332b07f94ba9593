package unixsig

import (
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    syscall.Signal
		wantErr string
	}{
		{"TERM", syscall.SIGTERM, ""}, {"SIGTERM", syscall.SIGTERM, ""}, {"hup", syscall.SIGHUP, ""},
		{" SigUsr1 ", syscall.SIGUSR1, ""}, {"9", syscall.SIGKILL, ""}, {"64", 64, ""}, {"1", syscall.SIGHUP, ""},
		{"", 0, "unknown signal"}, {"NOPE", 0, `unknown signal "NOPE"`}, {"0", 0, "out of range 1-64"},
		{"65", 0, "out of range 1-64"}, {"-1", 0, "out of range"}, {"SIG", 0, "unknown signal"},
	} {
		got, err := Parse(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// Every signal's name reads back as that signal.
func TestNameRoundTrip(t *testing.T) {
	if Name(0) != "" || Name(syscall.SIGTERM) != "TERM" || Name(40) != "40" {
		t.Fatalf("Name: %q %q %q", Name(0), Name(syscall.SIGTERM), Name(40))
	}
	for s := syscall.Signal(1); s <= 64; s++ {
		back, err := Parse(Name(s))
		if err != nil || back != s {
			t.Errorf("Parse(Name(%d) = %q) = %v, %v", s, Name(s), back, err)
		}
	}
}

func TestCatchable(t *testing.T) {
	all := Catchable()
	for _, s := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGURG, 32, 33} {
		if slices.Contains(all, os.Signal(s)) {
			t.Errorf("%v is catchable", s)
		}
	}
	for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGCHLD, syscall.SIGPIPE, syscall.SIGPROF, syscall.SIGSEGV, 34, 64} {
		if !slices.Contains(all, os.Signal(s)) {
			t.Errorf("%v is not catchable", s)
		}
	}
	if len(all) != 64-5 {
		t.Errorf("%d catchable signals, want 59", len(all))
	}
	less := Catchable(syscall.SIGCHLD, syscall.SIGPIPE)
	if len(less) != len(all)-2 || slices.Contains(less, os.Signal(syscall.SIGCHLD)) {
		t.Errorf("Catchable(CHLD, PIPE) kept them: %d signals", len(less))
	}
}

// CatchableNums is Catchable as numbers, and an init appends its SIGURG
// without the slice growing.
func TestCatchableNums(t *testing.T) {
	for _, except := range [][]syscall.Signal{nil, {syscall.SIGCHLD}, {syscall.SIGCHLD, syscall.SIGPIPE}} {
		nums, sigs := CatchableNums(except...), Catchable(except...)
		if len(nums) != len(sigs) {
			t.Fatalf("except %v: %d numbers, %d signals", except, len(nums), len(sigs))
		}
		for i := range nums {
			if os.Signal(nums[i]) != sigs[i] {
				t.Errorf("except %v: [%d] = %v, Catchable has %v", except, i, nums[i], sigs[i])
			}
		}
		if cap(nums) <= len(nums) {
			t.Errorf("except %v: no room for one more (len %d, cap %d)", except, len(nums), cap(nums))
		}
	}
}

// Parse knows every name the system's table has, as unix.SignalNum does.
func TestParseEveryName(t *testing.T) {
	for s := syscall.Signal(1); s <= 64; s++ {
		name := unix.SignalName(s)
		if name == "" {
			continue
		}
		if got, err := Parse(name); err != nil || got != unix.SignalNum(name) {
			t.Errorf("Parse(%q) = %v, %v; unix.SignalNum says %v", name, got, err, unix.SignalNum(name))
		}
	}
	if _, err := Parse("SIGNOPE"); err == nil {
		t.Error("Parse(SIGNOPE) took it")
	}
}
