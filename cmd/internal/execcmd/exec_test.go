package execcmd

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/pid1"
	"github.com/supervise-dev/supervise/proc"
)

func parse(t *testing.T, line string) Options {
	t.Helper()
	o, ok := ParseArgs(strings.Fields(line))
	if !ok {
		t.Fatalf("ParseArgs(%q) refused", line)
	}
	return o
}

func TestConfig(t *testing.T) {
	o := parse(t, "--single-child -e 3,4 --grace 250ms --stop-signal QUIT --restart on-failure "+
		"--backoff-initial 1s --backoff-max 1m --backoff-reset 2m --rewrite TERM:QUIT --rewrite HUP:0 -- sh -c x")
	cfg, err := Config(o, "exec")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Args, []string{"sh", "-c", "x"}) || !cfg.SingleChild || !cfg.Dedicated {
		t.Errorf("args %q, single child %v, dedicated %v", cfg.Args, cfg.SingleChild, cfg.Dedicated)
	}
	if !slices.Equal(cfg.SuccessExitCodes, []int{3, 4}) || cfg.Grace != 250*time.Millisecond || cfg.StopSignal != syscall.SIGQUIT {
		t.Errorf("success codes %v, grace %v, stop signal %v", cfg.SuccessExitCodes, cfg.Grace, cfg.StopSignal)
	}
	if cfg.Restart != pid1.RestartOnFailure || cfg.Backoff.Initial != time.Second || cfg.Backoff.Max != time.Minute || cfg.Backoff.ResetAfter != 2*time.Minute {
		t.Errorf("restart %v, backoff %+v", cfg.Restart, cfg.Backoff)
	}
	if len(cfg.Rewrite) != 2 || cfg.Rewrite[syscall.SIGTERM] != syscall.SIGQUIT || cfg.Rewrite[syscall.SIGHUP] != 0 {
		t.Errorf("rewrite %v", cfg.Rewrite)
	}
	if cfg.Sandbox != nil || cfg.Logger == nil {
		t.Errorf("sandbox %+v (want none), logger %v", cfg.Sandbox, cfg.Logger)
	}
}

// TestConfigErrors: each bad value is refused, naming its flag.
func TestConfigErrors(t *testing.T) {
	t.Setenv("LISTEN_FDS", "")
	for line, want := range map[string]string{
		"":                            "no command",
		"--restart sometimes -- true": "--restart",
		"--stop-signal NOPE -- true":  "--stop-signal",
		"--grace -1s -- true":         "--grace -1s",
		"--preserve-fds -1 -- true":   "--preserve-fds -1",
		"--preserve-fds 1023 -- true": "--preserve-fds 1023",
		"--preserve-fds 2 --listen-fds 1021 -- true": "at most 1022",
		"--rewrite TERM -- true":                     "--rewrite",
		"--rewrite KILL:TERM -- true":                "--rewrite",
		"--memory-max lots -- true":                  "--memory-max",
		"--pids-max -1 -- true":                      "--pids-max -1",
	} {
		_, err := Config(parse(t, line), "exec")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want one saying %q", line, err, want)
		}
	}
}

// TestListenFDsFromTheEnvironment: socket activation is read from
// $LISTEN_FDS when $LISTEN_PID is ours, and counts in the bound.
func TestListenFDsFromTheEnvironment(t *testing.T) {
	t.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
	t.Setenv("LISTEN_FDS", "2")
	cfg, err := Config(parse(t, "--preserve-fds 1 -- true"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ListenFDs != 2 || cfg.PreserveFDs != 3 {
		t.Errorf("listen %d, preserve %d; want 2, 3", cfg.ListenFDs, cfg.PreserveFDs)
	}
	t.Setenv("LISTEN_FDS", "1021")
	if _, err := Config(parse(t, "--preserve-fds 2 -- true")); err == nil || !strings.Contains(err.Error(), "at most 1022") {
		t.Errorf("1021 activation descriptors and 2 more: err %v", err)
	}
	t.Setenv("LISTEN_FDS", "x")
	if _, err := Config(parse(t, "-- true")); err == nil || !strings.Contains(err.Error(), "socket activation") {
		t.Errorf("LISTEN_FDS=x: err %v", err)
	}
}

// TestSandbox: the sandbox flags make a sandbox whose init is this binary
// run again with what concerns it, and the rest stays out here.
func TestSandbox(t *testing.T) {
	t.Setenv("LISTEN_FDS", "")
	cfg, err := Config(parse(t, "--memory-max 64MiB --pids-max 32 --ns pid,_mount --ns uts --grace 2s --stop-signal QUIT "+
		"--single-child -v --preserve-fds 2 --listen-fds 1 --restart always --rewrite TERM:QUIT -- true"), "exec")
	if err != nil {
		t.Fatal(err)
	}
	sb := cfg.Sandbox
	if sb == nil {
		t.Fatal("no sandbox")
	}
	if sb.MemoryMax != 64<<20 || sb.PidsMax != 32 {
		t.Errorf("memory %d, pids %d", sb.MemoryMax, sb.PidsMax)
	}
	if want := []proc.Namespace{"pid", "_mount", "uts"}; !slices.Equal(sb.Namespaces, want) {
		t.Errorf("namespaces %q, want %q", sb.Namespaces, want)
	}
	self, _ := os.Executable()
	want := []string{self, "exec", "--grace", "2s", "--stop-signal", "3", "--single-child", "--verbose",
		"--preserve-fds", "2", "--listen-fds", "1", "--"}
	if !slices.Equal(sb.InitArgs, want) {
		t.Errorf("init args\n %q\nwant\n %q", sb.InitArgs, want)
	}
	if cfg.ListenFDs != 1 || cfg.PreserveFDs != 3 {
		t.Errorf("listen %d, preserve %d; want 1, 3", cfg.ListenFDs, cfg.PreserveFDs)
	}
	// The init inside reads its arguments back with the same parser.
	inner := parse(t, strings.Join(append(sb.InitArgs[2:], "true"), " "))
	if inner.grace != 2*time.Second || inner.stopSignal != "3" || !inner.singleChild || !inner.verbose ||
		inner.preserveFDs != 2 || inner.listenFDs != 1 || inner.restart != "never" || len(inner.rewrite) != 0 {
		t.Errorf("the inner init reads %+v", inner)
	}
}

func TestParseArgs(t *testing.T) {
	for _, line := range []string{"-h", "--help", "--nope -- true", "--grace soon -- true", "-e x -- true",
		"-e 1 --success-exit-code 2 -- true", "-v --verbose -- true"} {
		if _, ok := ParseArgs(strings.Fields(line)); ok {
			t.Errorf("ParseArgs(%q) accepted", line)
		}
	}
	if err := Check([]string{"--help"}); !errors.Is(err, ErrHelp) {
		t.Errorf("Check(--help) = %v, want ErrHelp", err)
	}
	o := parse(t, "--rewrite=TERM:QUIT,_HUP:0 -e 3 -e 4,0x10 true --grace 1s")
	if !slices.Equal(o.rewrite, []string{"TERM:QUIT", "_HUP:0"}) || !slices.Equal(o.successExitCodes, []int{3, 4, 16}) {
		t.Errorf("rewrite %q, codes %v", o.rewrite, o.successExitCodes)
	}
	// Parsing stops at the command: its flags are its own.
	if !slices.Equal(o.Args, []string{"true", "--grace", "1s"}) || o.grace != pid1.DefaultGrace {
		t.Errorf("args %q, grace %v", o.Args, o.grace)
	}
}

// TestParseArgsWithoutFlags: a command line with no flags (read without
// the flag set) gives what the flag set gives: every default.
func TestParseArgsWithoutFlags(t *testing.T) {
	viaFlagSet := parse(t, "--verbose=false -- sh -c x")
	for _, line := range []string{"-- sh -c x", "sh -c x"} {
		if o := parse(t, line); !reflect.DeepEqual(o, viaFlagSet) {
			t.Errorf("ParseArgs(%q) = %+v, want %+v", line, o, viaFlagSet)
		}
	}
	if o := parse(t, "-- --grace 1s"); !slices.Equal(o.Args, []string{"--grace", "1s"}) || o.grace != pid1.DefaultGrace {
		t.Errorf("after --: args %q, grace %v", o.Args, o.grace)
	}
}

func TestHelp(t *testing.T) {
	var b bytes.Buffer
	Help(&b, "supervise-init")
	out := b.String()
	for _, want := range []string{"Usage: supervise-init [flags] -- CMD [ARGS…]", "--success-exit-code, -e",
		`(default "TERM")`, "(default 10s)", "--verbose, -v"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--listen-fds") {
		t.Error("help shows the hidden --listen-fds")
	}
}

// TestMainRuns runs the init for real: the command's exit code comes back,
// a bad flag value is a usage error, and what the CLI answers (help,
// completion, an unknown flag) is left to it.
func TestMainRuns(t *testing.T) {
	if code, ok := Main([]string{"--", "/bin/sh", "-c", "exit 3"}); !ok || code != 3 {
		t.Errorf("exit 3: code %d, ok %v", code, ok)
	}
	if code, ok := Main([]string{"--restart", "sometimes", "--", "true"}); !ok || code != ExitUsage {
		t.Errorf("bad --restart: code %d, ok %v; want %d, true", code, ok, ExitUsage)
	}
	for _, args := range [][]string{{"--help"}, {"--nope", "true"}, {"true", "--generate-bash-completion"}} {
		if _, ok := Main(args); ok {
			t.Errorf("Main(%q) handled it, want it left to the CLI", args)
		}
	}
}
