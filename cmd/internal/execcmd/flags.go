package execcmd

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/supervise-dev/supervise/pid1"
)

// Flag is one flag of the exec init, described once for its parsers: the
// standard library's (ParseArgs) and supervise's CLI. Both read the command line the same way, as the CLI is
// built on the flag package: -x and --x, --x=v or --x v, a bool takes no
// separate value, parsing stops at the first argument that is not a flag
// or after "--", and list values split at commas.
type Flag struct {
	Name    string
	Aliases []string
	Usage   string
	Value   any // the default and the kind: bool, string, time.Duration, int64, []string, []int
	Field   func(*Options) any
	Hidden  bool // not in --help: for the init inside a sandbox
}

// defaults are the flags' default values (Flag.Value): what a command
// line without flags runs with.
var defaults = Options{
	grace:          pid1.DefaultGrace,
	stopSignal:     "TERM",
	restart:        "never",
	backoffInitial: 10 * time.Second,
	backoffMax:     300 * time.Second,
	listenFDs:      -1, // from $LISTEN_FDS when $LISTEN_PID is ours
}

// Flags are the flags of the exec init, in the order help lists them.
func Flags() []Flag {
	return []Flag{
		{Name: "single-child", Usage: "forward signals to CMD alone, not to its process group; when CMD exits, leave the rest alone",
			Value: defaults.singleChild, Field: func(o *Options) any { return &o.singleChild }},
		{Name: "rewrite", Usage: "rewrite a received signal before forwarding it, FROM:TO (TERM:QUIT); TO 0 drops it (repeatable)",
			Value: []string(nil), Field: func(o *Options) any { return &o.rewrite }},
		{Name: "success-exit-code", Aliases: []string{"e"}, Usage: "report exit code `N` (128+signal included) as 0 (repeatable)",
			Value: []int(nil), Field: func(o *Options) any { return &o.successExitCodes }},
		{Name: "grace", Usage: "how long what CMD left behind gets between --stop-signal and SIGKILL",
			Value: defaults.grace, Field: func(o *Options) any { return &o.grace }},
		{Name: "stop-signal", Usage: "signal for what CMD left behind when it exited",
			Value: defaults.stopSignal, Field: func(o *Options) any { return &o.stopSignal }},
		{Name: "restart", Usage: "never, on-failure or always, with the kubelet's crash backoff",
			Value: defaults.restart, Field: func(o *Options) any { return &o.restart }},
		{Name: "backoff-initial", Usage: "first restart delay after the immediate one",
			Value: defaults.backoffInitial, Field: func(o *Options) any { return &o.backoffInitial }},
		{Name: "backoff-max", Usage: "restart delay cap",
			Value: defaults.backoffMax, Field: func(o *Options) any { return &o.backoffMax }},
		{Name: "backoff-reset", Usage: "a run this long starts the backoff over (default 2 × --backoff-max)",
			Value: defaults.backoffReset, Field: func(o *Options) any { return &o.backoffReset }},
		{Name: "memory-max", Usage: "run CMD in a cgroup with this memory limit (256MiB)",
			Value: defaults.memoryMax, Field: func(o *Options) any { return &o.memoryMax }},
		{Name: "pids-max", Usage: "run CMD in a cgroup with this process limit",
			Value: defaults.pidsMax, Field: func(o *Options) any { return &o.pidsMax }},
		{Name: "ns", Usage: "run CMD in new namespaces: pid, mount, uts, ipc, net, user (comma-separated)",
			Value: []string(nil), Field: func(o *Options) any { return &o.ns }},
		{Name: "preserve-fds", Usage: "pass `N` more descriptors after stdio (and after $LISTEN_FDS) to CMD: 3, 4, …; every other inherited one is closed at exec",
			Value: defaults.preserveFDs, Field: func(o *Options) any { return &o.preserveFDs }},
		{Name: "listen-fds", Usage: "the first N passed descriptors are socket-activation ones (default: $LISTEN_FDS when $LISTEN_PID is ours)",
			Value: defaults.listenFDs, Field: func(o *Options) any { return &o.listenFDs }, Hidden: true},
		{Name: "verbose", Aliases: []string{"v"}, Usage: "log what the init does to stderr",
			Value: defaults.verbose, Field: func(o *Options) any { return &o.verbose }},
	}
}

// ParseArgs reads the flags and arguments (those after "exec") with the
// standard library. ok is false for anything the CLI reports its own way:
// an unknown flag, -h/--help, a bad value, or both names of one flag.
func ParseArgs(args []string) (o Options, ok bool) {
	o, err := parseArgs(args)
	return o, err == nil
}

// ErrHelp is parseArgs's answer to -h and --help.
var ErrHelp = flag.ErrHelp

// Check says what is wrong with args, as ParseArgs reads them: nil,
// ErrHelp, or the first problem.
func Check(args []string) error {
	_, err := parseArgs(args)
	return err
}

func parseArgs(args []string) (o Options, _ error) {
	if len(args) > 0 && (args[0] == "--" || !strings.HasPrefix(args[0], "-")) {
		// No flags (supervise-init -- CMD, a container's usual init):
		// the defaults, without building a flag set the init's start
		// would wait for.
		o = defaults
		if args[0] == "--" {
			args = args[1:]
		}
		o.Args = args
		return o, nil
	}
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	flags := Flags()
	for _, f := range flags {
		for _, name := range append([]string{f.Name}, f.Aliases...) {
			switch p := f.Field(&o).(type) {
			case *bool:
				fs.BoolVar(p, name, f.Value.(bool), f.Usage)
			case *string:
				fs.StringVar(p, name, f.Value.(string), f.Usage)
			case *time.Duration:
				fs.DurationVar(p, name, f.Value.(time.Duration), f.Usage)
			case *int64:
				fs.Int64Var(p, name, f.Value.(int64), f.Usage)
			case *[]string:
				fs.Var((*stringList)(p), name, f.Usage)
			case *[]int:
				fs.Var((*intList)(p), name, f.Usage)
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, f := range flags {
		if set[f.Name] && len(f.Aliases) > 0 && set[f.Aliases[0]] {
			// The CLI refuses two forms of one flag.
			return o, fmt.Errorf("-%s and -%s are one flag: give it once", f.Name, f.Aliases[0])
		}
	}
	o.Args = fs.Args()
	return o, nil
}

// Help writes the usage of the exec init run as cmd ("supervise exec",
// "supervise-init"): a line, the description, the flags.
func Help(w io.Writer, cmd string) {
	fmt.Fprintf(w, "Usage: %s [flags] -- CMD [ARGS…]\n\n%s\n\nFlags:\n", cmd, Description)
	for _, f := range Flags() {
		if f.Hidden {
			continue
		}
		names := "--" + f.Name
		for _, a := range f.Aliases {
			names += ", -" + a
		}
		def := ""
		switch v := f.Value.(type) {
		case string:
			if v != "" {
				def = fmt.Sprintf(" (default %q)", v)
			}
		case time.Duration:
			if v != 0 {
				def = fmt.Sprintf(" (default %v)", v)
			}
		}
		fmt.Fprintf(w, "  %-26s %s%s\n", names, f.Usage, def)
	}
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
