package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/supervise-dev/supervise/backoff"
	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/pid1"
	"github.com/supervise-dev/supervise/proc"
)

// execCommand is `supervise exec [flags] -- CMD ARGS…`: a tini/dumb-init
// replacement that runs one command as PID 1 (or as a subreaper).
//
// Its action ends the process itself (os.Exit with the command's code):
// the code is the command's, not one of supervise's own.
func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Usage:     "run one command as an init: forward signals, reap zombies, exit with its code",
		ArgsUsage: "-- CMD [ARGS…]",
		Description: `Runs CMD in its own session and process group and forwards every signal it
gets to that group (--single-child: to CMD alone). It reaps every zombie (as
PID 1, or as a child subreaper otherwise) and exits with CMD's exit code, or
128+N when signal N killed it; 127 when CMD is not found, 126 when it cannot
be run. When CMD exits, what it left behind gets --stop-signal, then SIGKILL
after --grace; supervise exits as soon as the last of it is gone.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "single-child", Usage: "forward signals to CMD alone, not to its process group"},
			&cli.StringSliceFlag{Name: "rewrite", Usage: "rewrite a received signal before forwarding it, FROM:TO (TERM:QUIT); TO 0 drops it (repeatable)"},
			&cli.IntSliceFlag{Name: "success-exit-code", Aliases: []string{"e"}, Usage: "report exit code `N` (128+signal included) as 0 (repeatable)"},
			&cli.DurationFlag{Name: "grace", Value: pid1.DefaultGrace, Usage: "how long what CMD left behind gets between --stop-signal and SIGKILL"},
			&cli.StringFlag{Name: "stop-signal", Value: "TERM", Usage: "signal for what CMD left behind when it exited"},
			&cli.StringFlag{Name: "restart", Value: "never", Usage: "never, on-failure or always, with the kubelet's crash backoff"},
			&cli.DurationFlag{Name: "backoff-initial", Value: 10e9, Usage: "first restart delay after the immediate one"},
			&cli.DurationFlag{Name: "backoff-max", Value: 300e9, Usage: "restart delay cap"},
			&cli.DurationFlag{Name: "backoff-reset", Usage: "a run this long starts the backoff over (default 2 × --backoff-max)"},
			&cli.StringFlag{Name: "memory-max", Usage: "run CMD in a cgroup with this memory limit (256MiB)"},
			&cli.Int64Flag{Name: "pids-max", Usage: "run CMD in a cgroup with this process limit"},
			&cli.StringSliceFlag{Name: "ns", Usage: "run CMD in new namespaces: pid, mount, uts, ipc, net, user (comma-separated)"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log what the init does to stderr"},
		},
		Action: func(c *cli.Context) error {
			cfg, err := execConfig(c)
			if err != nil {
				return err // a usage error: exit 2 through main
			}
			code, err := pid1.Run(context.Background(), cfg)
			if err != nil {
				fmt.Fprintln(os.Stderr, "supervise:", oneLine(err.Error()))
			}
			os.Exit(code)
			return nil
		},
	}
}

func execConfig(c *cli.Context) (pid1.Config, error) {
	cfg := pid1.Config{
		Args:             c.Args().Slice(),
		SingleChild:      c.Bool("single-child"),
		SuccessExitCodes: c.IntSlice("success-exit-code"),
		Grace:            c.Duration("grace"),
		Backoff: backoff.CrashConfig{
			Initial: c.Duration("backoff-initial"), Max: c.Duration("backoff-max"), ResetAfter: c.Duration("backoff-reset"),
		},
	}
	if len(cfg.Args) == 0 {
		return cfg, errors.New("exec: no command: supervise exec [flags] -- CMD [ARGS…]")
	}
	var err error
	if cfg.Restart, err = pid1.ParseRestart(c.String("restart")); err != nil {
		return cfg, fmt.Errorf("exec: --%w", err)
	}
	if cfg.StopSignal, err = config.ParseSignal(c.String("stop-signal")); err != nil {
		return cfg, fmt.Errorf("exec: --stop-signal: %w", err)
	}
	if cfg.Grace < 0 {
		return cfg, fmt.Errorf("exec: --grace %v: must not be negative", cfg.Grace)
	}
	for _, r := range c.StringSlice("rewrite") {
		from, to, err := pid1.ParseRewrite(r)
		if err != nil {
			return cfg, fmt.Errorf("exec: --%w", err)
		}
		if cfg.Rewrite == nil {
			cfg.Rewrite = map[syscall.Signal]syscall.Signal{}
		}
		cfg.Rewrite[from] = to
	}
	level := slog.LevelWarn
	if c.Bool("verbose") {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("init", "exec")

	sb, err := execSandbox(c)
	if err != nil {
		return cfg, err
	}
	cfg.Sandbox = sb
	return cfg, nil
}

// execSandbox reads the sandbox flags; nil when none is given. Inside the
// sandbox this binary runs again as a plain exec init (the runtime owns
// the wait4s of this process, so the reaping and the grace-bounded
// cleanup in there is that init's job); it gets the flags that concern
// it, the rewrite and the restart stay out here.
func execSandbox(c *cli.Context) (*pid1.Sandbox, error) {
	var sb pid1.Sandbox
	if s := c.String("memory-max"); s != "" {
		n, err := config.ParseSize(s)
		if err != nil {
			return nil, fmt.Errorf("exec: --memory-max: %w", err)
		}
		sb.MemoryMax = n
	}
	if sb.PidsMax = c.Int64("pids-max"); sb.PidsMax < 0 {
		return nil, fmt.Errorf("exec: --pids-max %d: must not be negative", sb.PidsMax)
	}
	for _, ns := range c.StringSlice("ns") {
		for n := range strings.SplitSeq(ns, ",") {
			if n = strings.TrimSpace(n); n != "" {
				sb.Namespaces = append(sb.Namespaces, proc.Namespace(n))
			}
		}
	}
	if sb.MemoryMax == 0 && sb.PidsMax == 0 && len(sb.Namespaces) == 0 {
		return nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("exec: finding our own binary for the init inside the sandbox: %w", err)
	}
	sb.InitArgs = []string{self, "exec",
		"--grace", c.Duration("grace").String(),
		"--stop-signal", strconv.Itoa(int(mustSignal(c.String("stop-signal"))))}
	if c.Bool("single-child") {
		sb.InitArgs = append(sb.InitArgs, "--single-child")
	}
	if c.Bool("verbose") {
		sb.InitArgs = append(sb.InitArgs, "--verbose")
	}
	sb.InitArgs = append(sb.InitArgs, "--")
	return &sb, nil
}

// mustSignal is for a signal execConfig has already validated.
func mustSignal(s string) syscall.Signal {
	sig, err := config.ParseSignal(s)
	if err != nil {
		return syscall.SIGTERM
	}
	return sig
}

func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}
