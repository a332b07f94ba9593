package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/supervise-dev/supervise/cmd/internal/execcmd"
)

// cliFlag is f as a flag of the CLI's exec command: the same names,
// default and help as the standard library parser reads.
func cliFlag(f execcmd.Flag) cli.Flag {
	switch v := f.Value.(type) {
	case bool:
		return &cli.BoolFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage, Value: v, Hidden: f.Hidden}
	case string:
		return &cli.StringFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage, Value: v, Hidden: f.Hidden}
	case time.Duration:
		return &cli.DurationFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage, Value: v, Hidden: f.Hidden}
	case int64:
		return &cli.Int64Flag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage, Value: v, Hidden: f.Hidden}
	case []string:
		return &cli.StringSliceFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage, Hidden: f.Hidden}
	case []int:
		return &cli.IntSliceFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage, Hidden: f.Hidden}
	}
	panic("exec flag " + f.Name + ": unknown kind")
}

// fromCLI stores f's value from a CLI context into o.
func fromCLI(f execcmd.Flag, c *cli.Context, o *execcmd.Options) {
	switch p := f.Field(o).(type) {
	case *bool:
		*p = c.Bool(f.Name)
	case *string:
		*p = c.String(f.Name)
	case *time.Duration:
		*p = c.Duration(f.Name)
	case *int64:
		*p = c.Int64(f.Name)
	case *[]string:
		*p = c.StringSlice(f.Name)
	case *[]int:
		*p = c.IntSlice(f.Name)
	}
}
