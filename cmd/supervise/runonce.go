package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/internal/execpath"
)

// runOnceCommand is foreman's `run`: one command with the project's
// environment, replacing this process (its exit status and signals are
// the command's own). `run` itself is taken by supervise run.
func runOnceCommand() *cli.Command {
	return &cli.Command{
		Name:      "run-once",
		Usage:     "run one command with the project's .env and a PORT, as foreman run: supervise run-once rake db:migrate",
		ArgsUsage: "CMD [ARG...]",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "env files to read instead of ./.env, in order"},
			&cli.IntFlag{Name: "port", Aliases: []string{"p"}, Usage: "PORT to set (default $PORT from the env files or the environment, else 5000)"},
			rootFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() == 0 {
				return fmt.Errorf("run-once: give the command to run")
			}
			if err := enterRoot(c); err != nil {
				return err
			}
			return runOnce(c.Args().Slice(), c.StringSlice("env"), c.Int("port"))
		},
	}
}

func runOnce(argv, envFiles []string, port int) error {
	if len(envFiles) == 0 {
		if _, err := os.Stat(".env"); err == nil {
			envFiles = []string{".env"}
		}
	}
	var files []string
	for _, f := range envFiles {
		files = append(files, strings.Split(f, ",")...)
	}
	files = slices.DeleteFunc(files, func(s string) bool { return s == "" })
	vars, err := config.LoadEnvFiles(files)
	if err != nil {
		printConfigError(err)
		os.Exit(exitUsage)
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for k, v := range vars {
		env[k] = v
	}
	switch {
	case port > 0:
		env["PORT"] = strconv.Itoa(port)
	case env["PORT"] == "":
		env["PORT"] = "5000"
	}
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	slices.Sort(list)
	// One word with shell syntax in it is a command line, as foreman's.
	if len(argv) == 1 && strings.ContainsAny(argv[0], " \t|&;<>()$'\"*?`") {
		argv = []string{"/bin/sh", "-c", argv[0]}
	}
	dir, _ := os.Getwd()
	path, err := execpath.Look(argv[0], list, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervise:", err)
		code := 127
		var ee *execpath.Error
		if errors.As(err, &ee) {
			code = ee.Code
		}
		os.Exit(code)
	}
	return syscall.Exec(path, argv, list)
}
