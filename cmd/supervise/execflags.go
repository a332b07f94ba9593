package main

import (
	"flag"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/supervise-dev/supervise/pid1"
)

// execFlag is one flag of `supervise exec`, described once for both of
// its parsers: the standard library's (parseExecArgs) and the CLI's
// (execCommand). Both read the command line the same way, as the CLI is
// built on the flag package: -x and --x, --x=v or --x v, a bool takes no
// separate value, parsing stops at the first argument that is not a flag
// or after "--", and list values split at commas.
type execFlag struct {
	name    string
	aliases []string
	usage   string
	value   any // the default and the kind: bool, string, time.Duration, int64, []string, []int
	field   func(*execOptions) any
	hidden  bool // not in --help: for the init inside a sandbox
}

func execFlags() []execFlag {
	return []execFlag{
		{name: "single-child", usage: "forward signals to CMD alone, not to its process group; when CMD exits, leave the rest alone",
			value: false, field: func(o *execOptions) any { return &o.singleChild }},
		{name: "rewrite", usage: "rewrite a received signal before forwarding it, FROM:TO (TERM:QUIT); TO 0 drops it (repeatable)",
			value: []string(nil), field: func(o *execOptions) any { return &o.rewrite }},
		{name: "success-exit-code", aliases: []string{"e"}, usage: "report exit code `N` (128+signal included) as 0 (repeatable)",
			value: []int(nil), field: func(o *execOptions) any { return &o.successExitCodes }},
		{name: "grace", usage: "how long what CMD left behind gets between --stop-signal and SIGKILL",
			value: pid1.DefaultGrace, field: func(o *execOptions) any { return &o.grace }},
		{name: "stop-signal", usage: "signal for what CMD left behind when it exited",
			value: "TERM", field: func(o *execOptions) any { return &o.stopSignal }},
		{name: "restart", usage: "never, on-failure or always, with the kubelet's crash backoff",
			value: "never", field: func(o *execOptions) any { return &o.restart }},
		{name: "backoff-initial", usage: "first restart delay after the immediate one",
			value: 10 * time.Second, field: func(o *execOptions) any { return &o.backoffInitial }},
		{name: "backoff-max", usage: "restart delay cap",
			value: 300 * time.Second, field: func(o *execOptions) any { return &o.backoffMax }},
		{name: "backoff-reset", usage: "a run this long starts the backoff over (default 2 × --backoff-max)",
			value: time.Duration(0), field: func(o *execOptions) any { return &o.backoffReset }},
		{name: "memory-max", usage: "run CMD in a cgroup with this memory limit (256MiB)",
			value: "", field: func(o *execOptions) any { return &o.memoryMax }},
		{name: "pids-max", usage: "run CMD in a cgroup with this process limit",
			value: int64(0), field: func(o *execOptions) any { return &o.pidsMax }},
		{name: "ns", usage: "run CMD in new namespaces: pid, mount, uts, ipc, net, user (comma-separated)",
			value: []string(nil), field: func(o *execOptions) any { return &o.ns }},
		{name: "preserve-fds", usage: "pass `N` more descriptors after stdio (and after $LISTEN_FDS) to CMD: 3, 4, …; every other inherited one is closed at exec",
			value: int64(0), field: func(o *execOptions) any { return &o.preserveFDs }},
		{name: "listen-fds", usage: "the first N passed descriptors are socket-activation ones (default: $LISTEN_FDS when $LISTEN_PID is ours)",
			value: int64(-1), field: func(o *execOptions) any { return &o.listenFDs }, hidden: true},
		{name: "verbose", aliases: []string{"v"}, usage: "log what the init does to stderr",
			value: false, field: func(o *execOptions) any { return &o.verbose }},
	}
}

// cli is the flag for the CLI's exec command.
func (f execFlag) cli() cli.Flag {
	switch v := f.value.(type) {
	case bool:
		return &cli.BoolFlag{Name: f.name, Aliases: f.aliases, Usage: f.usage, Value: v, Hidden: f.hidden}
	case string:
		return &cli.StringFlag{Name: f.name, Aliases: f.aliases, Usage: f.usage, Value: v, Hidden: f.hidden}
	case time.Duration:
		return &cli.DurationFlag{Name: f.name, Aliases: f.aliases, Usage: f.usage, Value: v, Hidden: f.hidden}
	case int64:
		return &cli.Int64Flag{Name: f.name, Aliases: f.aliases, Usage: f.usage, Value: v, Hidden: f.hidden}
	case []string:
		return &cli.StringSliceFlag{Name: f.name, Aliases: f.aliases, Usage: f.usage, Hidden: f.hidden}
	case []int:
		return &cli.IntSliceFlag{Name: f.name, Aliases: f.aliases, Usage: f.usage, Hidden: f.hidden}
	}
	panic("exec flag " + f.name + ": unknown kind")
}

// fromCLI stores the flag's value from a CLI context into o.
func (f execFlag) fromCLI(c *cli.Context, o *execOptions) {
	switch p := f.field(o).(type) {
	case *bool:
		*p = c.Bool(f.name)
	case *string:
		*p = c.String(f.name)
	case *time.Duration:
		*p = c.Duration(f.name)
	case *int64:
		*p = c.Int64(f.name)
	case *[]string:
		*p = c.StringSlice(f.name)
	case *[]int:
		*p = c.IntSlice(f.name)
	}
}

// parseExecArgs reads the flags and arguments after "exec" with the
// standard library. ok is false for anything the CLI reports its own way:
// an unknown flag, -h/--help, a bad value, or both names of one flag.
func parseExecArgs(args []string) (o execOptions, ok bool) {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	flags := execFlags()
	for _, f := range flags {
		for _, name := range append([]string{f.name}, f.aliases...) {
			switch p := f.field(&o).(type) {
			case *bool:
				fs.BoolVar(p, name, f.value.(bool), f.usage)
			case *string:
				fs.StringVar(p, name, f.value.(string), f.usage)
			case *time.Duration:
				fs.DurationVar(p, name, f.value.(time.Duration), f.usage)
			case *int64:
				fs.Int64Var(p, name, f.value.(int64), f.usage)
			case *[]string:
				fs.Var((*stringList)(p), name, f.usage)
			case *[]int:
				fs.Var((*intList)(p), name, f.usage)
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		return o, false
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, f := range flags {
		if set[f.name] && len(f.aliases) > 0 && set[f.aliases[0]] {
			return o, false // the CLI refuses two forms of one flag
		}
	}
	o.args = fs.Args()
	return o, true
}

// stringList is a repeatable string flag whose values split at commas,
// each trimmed, as the CLI's StringSliceFlag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	for s := range strings.SplitSeq(v, ",") {
		*l = append(*l, strings.TrimSpace(s))
	}
	return nil
}

// intList is a repeatable int flag whose values split at commas, each an
// integer in Go syntax (base prefixes allowed), as the CLI's IntSliceFlag.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, n := range *l {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	for s := range strings.SplitSeq(v, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
		if err != nil {
			return err
		}
		*l = append(*l, int(n))
	}
	return nil
}
