package main

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/supervise-dev/supervise/cmd/internal/execcmd"
	"github.com/urfave/cli/v2"
)

// cliExecOptions parses args (those after "exec") with the CLI, as
// `supervise exec` did before it had a fast path; ok is false when the CLI
// refuses them or shows its help instead of running.
func cliExecOptions(t *testing.T, args []string) (o execcmd.Options, ok bool) {
	t.Helper()
	cmd := execCommand()
	cmd.Action = func(c *cli.Context) error {
		o, ok = execCLIOptions(c), true
		return nil
	}
	app := &cli.App{
		Name: "supervise", Commands: []*cli.Command{cmd},
		Writer: io.Discard, ErrWriter: io.Discard,
		ExitErrHandler: func(*cli.Context, error) {},
	}
	if err := app.Run(append([]string{"supervise", "exec"}, args...)); err != nil {
		return execcmd.Options{}, false
	}
	return o, ok
}

// TestParseExecArgsAsTheCLI: the fast path reads every command line it
// accepts exactly as the CLI does, and leaves to the CLI every one the
// CLI refuses or answers with help.
func TestParseExecArgsAsTheCLI(t *testing.T) {
	// Each case is a command line after "exec", split at spaces; "_"
	// stands for a space inside an argument.
	cases := []string{
		"-- true",
		"true",
		"sh -c exit",
		"--single-child -- sh -c x",
		"--single-child=false -- true",
		"-single-child -- true",
		"--rewrite TERM:QUIT --rewrite HUP:0 -- true",
		"--rewrite=TERM:QUIT,HUP:0 -- true",
		"--rewrite _TERM:QUIT,_HUP:0_ -- true",
		"--rewrite ,TERM:QUIT, -- true",
		"-e 3 -e 4,0x10 -- true",
		"-e _3,_4_ -- true",
		"--success-exit-code=143 -- true",
		"--grace 250ms --stop-signal QUIT -- true",
		"--grace=0 -- true",
		"--restart on-failure --backoff-initial 1s --backoff-max 1m --backoff-reset 2m -- true",
		"--memory-max 64MiB --pids-max 32 --ns pid,_mount --ns uts -- true",
		"-v -- true",
		"--verbose=true -- true",
		"--pids-max 0x20 -- true",
		"-- --single-child",
		"true --single-child",
		"",
		// Refused by the CLI (or answered with its help).
		"--bogus -- true",
		"-h",
		"--help",
		"--help -- true",
		"-e 3 --success-exit-code 4 -- true",
		"-v --verbose -- true",
		"--grace abc -- true",
		"-e x -- true",
		"-e= -- true",
		"--pids-max 1.5 -- true",
		"--single-child=maybe -- true",
		"--grace",
	}
	for _, c := range cases {
		args := strings.Fields(c)
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "_", " ")
		}
		want, cliOK := cliExecOptions(t, args)
		got, ok := execcmd.ParseArgs(args)
		switch {
		case ok != cliOK:
			t.Errorf("exec %s: fast path ok=%v, CLI ok=%v", c, ok, cliOK)
		case ok && !reflect.DeepEqual(got, want):
			t.Errorf("exec %s:\nfast path %+v\nCLI       %+v", c, got, want)
		}
	}
}

// TestExecMainLeavesToTheCLI: help and completion are the CLI's.
func TestExecMainLeavesToTheCLI(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h", "--", "true"}, {"true", "--generate-bash-completion"}, {"--bogus"}} {
		if _, ok := execcmd.Main(args, "exec"); ok {
			t.Errorf("execcmd.Main(%q) ran instead of leaving it to the CLI", args)
		}
	}
}
