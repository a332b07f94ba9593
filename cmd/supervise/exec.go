package main

import (
	"os"

	"github.com/supervise-dev/supervise/cmd/internal/execcmd"
	"github.com/urfave/cli/v2"
)

// `supervise exec [flags] -- CMD ARGS…` is a tini/dumb-init replacement
// that runs one command as PID 1 (or as a subreaper). Its flags are read
// in two places from one table (cmd/internal/execcmd): execcmd.Main, the fast
// path that main takes before the CLI exists, and the CLI's exec command,
// which only ever runs for what Main leaves to it (help, usage errors,
// completion) and which prints the help. The supervise-init binary is
// the fast path alone, without the rest of supervise linked in.

// execCommand is the CLI's `exec`: help and usage errors. Its action ends
// the process itself (os.Exit with the command's code): the code is the
// command's, not one of supervise's own.
func execCommand() *cli.Command {
	var flags []cli.Flag
	for _, f := range execcmd.Flags() {
		flags = append(flags, cliFlag(f))
	}
	return &cli.Command{
		Name:        "exec",
		Usage:       "run one command as an init: forward signals, reap zombies, exit with its code",
		ArgsUsage:   "-- CMD [ARGS…]",
		Description: execcmd.Description,
		Flags:       flags,
		Action: func(c *cli.Context) error {
			cfg, err := execcmd.Config(execCLIOptions(c), "exec")
			if err != nil {
				return err // a usage error: exit 2 through main
			}
			os.Exit(execcmd.Run(cfg))
			return nil
		},
	}
}

// execCLIOptions reads the exec command's flags and arguments from the CLI.
func execCLIOptions(c *cli.Context) execcmd.Options {
	o := execcmd.Options{Args: c.Args().Slice()}
	for _, f := range execcmd.Flags() {
		fromCLI(f, c, &o)
	}
	return o
}
