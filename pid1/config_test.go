package pid1

import (
	"syscall"
	"testing"
)

func TestExitCode(t *testing.T) {
	exited := func(code int) syscall.WaitStatus { return syscall.WaitStatus(code << 8) }
	signaled := func(sig syscall.Signal) syscall.WaitStatus { return syscall.WaitStatus(sig) }
	cases := []struct {
		name    string
		ws      syscall.WaitStatus
		success []int
		want    int
	}{
		{"exit 0", exited(0), nil, 0},
		{"exit 7", exited(7), nil, 7},
		{"exit 255", exited(255), nil, 255},
		{"SIGKILL", signaled(syscall.SIGKILL), nil, 137},
		{"SIGTERM", signaled(syscall.SIGTERM), nil, 143},
		{"exit 7 is a success", exited(7), []int{7}, 0},
		{"exit 7, other successes", exited(7), []int{1, 143}, 7},
		{"SIGTERM is a success", signaled(syscall.SIGTERM), []int{143}, 0},
	}
	for _, c := range cases {
		if got := ExitCode(c.ws, c.success); got != c.want {
			t.Errorf("%s: ExitCode = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestParseRewrite(t *testing.T) {
	cases := []struct {
		in       string
		from, to syscall.Signal
		bad      bool
	}{
		{in: "TERM:QUIT", from: syscall.SIGTERM, to: syscall.SIGQUIT},
		{in: "sigterm:sigquit", from: syscall.SIGTERM, to: syscall.SIGQUIT},
		{in: "15:3", from: syscall.SIGTERM, to: syscall.SIGQUIT},
		{in: "HUP:0", from: syscall.SIGHUP, to: 0},
		{in: "INT: 0", from: syscall.SIGINT, to: 0},
		{in: "TERM", bad: true},
		{in: "TERM:NOPE", bad: true},
		{in: "NOPE:TERM", bad: true},
		{in: "KILL:TERM", bad: true},
		{in: "STOP:TERM", bad: true},
		{in: "99:TERM", bad: true},
	}
	for _, c := range cases {
		from, to, err := ParseRewrite(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("ParseRewrite(%q) = %v, %v; want an error", c.in, from, to)
			}
			continue
		}
		if err != nil || from != c.from || to != c.to {
			t.Errorf("ParseRewrite(%q) = %v, %v, %v; want %v, %v", c.in, from, to, err, c.from, c.to)
		}
	}
}

func TestParseRestart(t *testing.T) {
	for in, want := range map[string]Restart{"": RestartNever, "never": RestartNever, "on-failure": RestartOnFailure, "always": RestartAlways} {
		if got, err := ParseRestart(in); err != nil || got != want {
			t.Errorf("ParseRestart(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseRestart("sometimes"); err == nil {
		t.Error("ParseRestart(sometimes): no error")
	}
}

func TestConfigRewrite(t *testing.T) {
	c := Config{Rewrite: map[syscall.Signal]syscall.Signal{syscall.SIGTERM: syscall.SIGQUIT, syscall.SIGHUP: 0}}
	for in, want := range map[syscall.Signal]syscall.Signal{
		syscall.SIGTERM: syscall.SIGQUIT, syscall.SIGHUP: 0, syscall.SIGUSR1: syscall.SIGUSR1,
	} {
		if got := c.rewrite(in); got != want {
			t.Errorf("rewrite(%v) = %v, want %v", in, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	for name, c := range map[string]Config{
		"no args":        {},
		"empty command":  {Args: []string{""}},
		"bad restart":    {Args: []string{"true"}, Restart: "sometimes"},
		"negative grace": {Args: []string{"true"}, Grace: -1},
	} {
		if err := c.validate(); err == nil {
			t.Errorf("%s: validate passed", name)
		}
	}
	if err := (&Config{Args: []string{"true"}}).validate(); err != nil {
		t.Errorf("a minimal config: %v", err)
	}
}
