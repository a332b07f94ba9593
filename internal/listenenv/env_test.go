package listenenv

import (
	"slices"
	"testing"
)

func TestCount(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want int
		err  bool
	}{
		{[]string{"LISTEN_FDS=2", "LISTEN_PID=42"}, 2, false},
		{[]string{"LISTEN_PID=42", "LISTEN_FDS=1"}, 1, false},
		{[]string{"LISTEN_FDS=2", "LISTEN_PID=7"}, 0, false}, // for another process
		{[]string{"LISTEN_FDS=2"}, 0, false},                 // no owner: sd_listen_fds ignores it too
		{[]string{"LISTEN_PID=42"}, 0, false},
		{[]string{"LISTEN_FDS=x", "LISTEN_PID=42"}, 0, true},
		{[]string{"LISTEN_FDS=-1", "LISTEN_PID=42"}, 0, true},
		{[]string{"LISTEN_FDS=5000", "LISTEN_PID=42"}, 0, true},
	} {
		got, err := Count(c.env, 42)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("Count(%q) = %d, %v; want %d, error %v", c.env, got, err, c.want, c.err)
		}
	}
}

func TestWithPID(t *testing.T) {
	got := WithPID([]string{"A=1", "LISTEN_PID=1", "LISTEN_FDS=2", "LISTEN_PID=3"}, 99)
	want := []string{"A=1", "LISTEN_FDS=2", "LISTEN_PID=99"}
	if !slices.Equal(got, want) {
		t.Errorf("WithPID = %q, want %q", got, want)
	}
}

func TestEnv(t *testing.T) {
	got := Env([]string{"http", "admin"})
	want := []string{"LISTEN_FDS=2", "LISTEN_FDNAMES=http:admin"}
	if !slices.Equal(got, want) {
		t.Errorf("Env = %q, want %q", got, want)
	}
}
