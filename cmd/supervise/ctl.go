package main

// supervisectl: the control client. The same verbs run as `supervisectl
// VERB …` (the binary invoked under that name) and `supervise ctl VERB …`.
//
// Exit codes: 0 ok, 1 the command failed (an unknown program, a refusal),
// 2 usage, 3 no supervisor reachable on the socket.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/ctl/ctlfmt"
	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/logs"
)

const (
	ctlExitFailed      = 1
	ctlExitUsage       = 2
	ctlExitUnreachable = 3
	ctlExitInterrupted = 130
)

// ctlMain runs supervisectl; args are the whole command line, args[0]
// included. It returns the exit code.
func ctlMain(args []string) int {
	code := 0
	app := ctlApp(&code)
	if err := app.Run(flagsFirst(app, args, runsCommand)); err != nil {
		fmt.Fprintf(os.Stderr, "supervisectl: %v\nRun 'supervisectl --help' for usage.\n", err)
		return ctlExitUsage
	}
	return code
}

// ctlApp is supervisectl's command tree; a verb's exit code goes to *code.
func ctlApp(code *int) *cli.App {
	return &cli.App{
		Name:      "supervisectl",
		Usage:     "see and steer a running supervise",
		UsageText: "supervisectl [--socket S] [--json] VERB [ARGS…]",
		Flags:     ctlFlags(),
		Commands:  ctlVerbs(func(c int) error { *code = c; return nil }),
		Action: func(c *cli.Context) error {
			*code = ctlNoVerb(c, cli.ShowAppHelp)
			return nil
		},
		HideHelpCommand: true,
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return err
		},
		// Exit codes are ours: errors from Run are usage errors.
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// ctlCommand is `supervise ctl …`. The enclosing app turns errors into its
// usage exit code, so a verb that fails exits here with its own code.
func ctlCommand() *cli.Command {
	return &cli.Command{
		Name:      "ctl",
		Usage:     "control a running supervise (what supervisectl does)",
		UsageText: "supervise ctl [--socket S] [--json] VERB [ARGS…]",
		Flags:     ctlFlags(),
		Subcommands: ctlVerbs(func(code int) error {
			if code != 0 {
				os.Exit(code)
			}
			return nil
		}),
		Action: func(c *cli.Context) error {
			if code := ctlNoVerb(c, cli.ShowSubcommandHelp); code != 0 {
				os.Exit(code)
			}
			return nil
		},
		HideHelpCommand: true,
	}
}

func ctlFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "socket", Aliases: []string{"s"}, EnvVars: []string{"SUPERVISE_SOCKET"},
			Usage: "control socket (default: the dev runner of this folder or one above it, else $XDG_RUNTIME_DIR/supervise.sock, /run/supervise.sock for root, else /tmp/supervise-UID/supervise.sock)"},
		&cli.IntSliceFlag{Name: "server-uid",
			Usage: "trust a supervisor running as this uid (root and your own uid are always trusted; any other listener is refused)"},
		jsonFlag(),
	}
}

func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print JSON for scripts"}
}

// ctlNoVerb handles a command line without a (known) verb.
func ctlNoVerb(c *cli.Context, help func(*cli.Context) error) int {
	if c.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "supervisectl: unknown verb %q\nRun 'supervisectl --help' for usage.\n", c.Args().First())
		return ctlExitUsage
	}
	_ = help(c)
	return ctlExitUsage
}

// verbFunc runs one verb; errors are sorted into exit codes by ctlRun.
type verbFunc func(ctx context.Context, e *ctlEnv) error

// ctlVerb is one supervisectl command: its command line, how it reads its
// own flags, and what it runs (the request and the printing of the reply).
// Each verb of the control protocol (ctl.Verbs) has one; top is the
// client's own.
type ctlVerb struct {
	name, args, usage string
	run               verbFunc
	flags             []cli.Flag
	// options reads the verb's flags into e; an error is a usage error.
	options func(c *cli.Context, e *ctlEnv) error
}

func ctlVerbTable() []ctlVerb {
	followFlag := &cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep streaming new entries"}
	return []ctlVerb{
		{name: "status", args: "[NAME…]", usage: "show programs: state, pid, uptime, restarts, last exit, memory, CPU",
			run: ctlStatus},
		{name: "why", args: "[NAME…]", usage: "show how programs last ended: the exit and its reason, how long the run lasted, its peak memory and last lines, the restarts and backoff now",
			run: ctlWhy},
		{name: "start", args: "NAME…", usage: "start programs; returns when they are ready (or have failed)",
			run: ctlAct("started", func(ctx context.Context, e *ctlEnv) error {
				return e.client.Start(ctx, e.names, e.wait)
			}), options: waitOptions,
			flags: []cli.Flag{noWaitFlag("return once the start is under way"), timeoutFlag("how long each instance may take to be ready")}},
		{name: "stop", args: "NAME…", usage: "stop programs and keep them stopped; what depends on them keeps running unless --with-dependents",
			run: ctlAct("stopped", func(ctx context.Context, e *ctlEnv) error {
				return e.client.Stop(ctx, e.names, ctl.StopOptions{WithDependents: e.withDependents})
			}), options: dependentsOption,
			flags: []cli.Flag{withDependentsFlag("stop what depends on the programs first, deepest first; it runs again when they are started")}},
		{name: "restart", args: "NAME…", usage: "restart programs, clearing their crash backoff: the instances of a program one at a time, each ready before the next; returns when all are ready",
			run: ctlAct("restarted", func(ctx context.Context, e *ctlEnv) error {
				return e.client.Restart(ctx, e.names, e.restart)
			}), options: restartOptions,
			flags: []cli.Flag{&cli.BoolFlag{Name: "all-at-once", Usage: "restart every instance together"},
				withDependentsFlag("stop what depends on the programs first, deepest first, and bring it back once they run"),
				noWaitFlag("return once the restart is under way"), timeoutFlag("how long each new instance may take to be ready")}},
		{name: "scale", args: "NAME=N…", usage: "set how many instances programs run (until a reload changes their instances); returns when the new ones are ready and the surplus ones gone",
			run: ctlScale, options: waitOptions,
			flags: []cli.Flag{noWaitFlag("return once the scaling is under way"), timeoutFlag("how long each new instance may take to be ready")}},
		{name: "signal", args: "SIG NAME…", usage: "send a signal (HUP, SIGUSR1, 10…) to programs", run: ctlSignal},
		{name: "logs", args: "[NAME…]", usage: "print the programs' recent output; -f follows it, across restarts",
			run: ctlLogs, options: followOptions,
			flags: []cli.Flag{followFlag,
				&cli.IntFlag{Name: "n", Aliases: []string{"lines"}, Value: -1, DefaultText: "all", Usage: "lines of history per program"}}},
		{name: "events", usage: "print recent state changes; -f follows them",
			run: ctlEvents, options: followOptions, flags: []cli.Flag{followFlag}},
		{name: "top", args: "[NAME…]", usage: "a live view of the programs: state, readiness, restarts, CPU %, memory, last exit, and the why line of the selected one (c/m/n sort, j/k select, q quits)",
			run: ctlTop, options: topOptions,
			flags: []cli.Flag{&cli.StringFlag{Name: "sort", Value: ctlfmt.SortCPU, Usage: "cpu, mem or name"},
				&cli.DurationFlag{Name: "interval", Value: 2 * time.Second, Usage: "time between refreshes"}}},
		{name: "reload", usage: "re-read the config file and apply the changes", run: ctlBare("reload", "reloaded", (*ctl.Client).Reload)},
		{name: "shutdown", usage: "stop every program and make supervise exit", run: ctlBare("shutdown", "shutting down", (*ctl.Client).Shutdown)},
		{name: "upgrade", usage: "re-execute the supervise binary now at its path in place, every program kept running; exits 1 naming the cause when the new binary cannot take over (the old one carries on)",
			run: ctlUpgrade},
		{name: "version", usage: "show the running supervise's version, pid, binary and its upgrades", run: ctlVersion},
	}
}

func ctlVerbs(exit func(code int) error) []*cli.Command {
	var cmds []*cli.Command
	for _, v := range ctlVerbTable() {
		cmds = append(cmds, &cli.Command{
			Name:      v.name,
			Usage:     v.usage,
			ArgsUsage: v.args,
			Flags:     append([]cli.Flag{jsonFlag()}, v.flags...),
			Action:    func(c *cli.Context) error { return exit(ctlRun(c, v)) },
			OnUsageError: func(_ *cli.Context, err error, _ bool) error {
				return err
			},
		})
	}
	return cmds
}

// The verbs' options: each reads the flags its verb defines.

func waitOptions(c *cli.Context, e *ctlEnv) error {
	e.wait = ctl.WaitOptions{NoWait: c.Bool("no-wait"), Timeout: c.Duration("timeout")}
	if c.IsSet("timeout") && e.wait.Timeout <= 0 {
		return fmt.Errorf("--timeout %v: more than 0", e.wait.Timeout)
	}
	return nil
}

func dependentsOption(c *cli.Context, e *ctlEnv) error {
	e.withDependents = c.Bool("with-dependents")
	return nil
}

func restartOptions(c *cli.Context, e *ctlEnv) error {
	err := waitOptions(c, e)
	e.restart = ctl.RestartOptions{AllAtOnce: c.Bool("all-at-once"), NoWait: e.wait.NoWait, Timeout: e.wait.Timeout,
		WithDependents: c.Bool("with-dependents")}
	return err
}

func followOptions(c *cli.Context, e *ctlEnv) error {
	e.follow = c.Bool("follow")
	if c.IsSet("n") {
		e.n = c.Int("n")
	}
	return nil
}

func topOptions(c *cli.Context, e *ctlEnv) error {
	e.sort, e.interval = c.String("sort"), c.Duration("interval")
	switch {
	case e.sort != ctlfmt.SortCPU && e.sort != ctlfmt.SortMemory && e.sort != ctlfmt.SortName:
		return fmt.Errorf("--sort %q: want cpu, mem or name", e.sort)
	case e.interval < 100*time.Millisecond:
		return fmt.Errorf("--interval %v: at least 100ms", e.interval)
	}
	return nil
}

func noWaitFlag(usage string) cli.Flag { return &cli.BoolFlag{Name: "no-wait", Usage: usage} }

func withDependentsFlag(usage string) cli.Flag {
	return &cli.BoolFlag{Name: "with-dependents", Usage: usage}
}

func timeoutFlag(usage string) cli.Flag {
	return &cli.DurationFlag{Name: "timeout", DefaultText: "the program's rollout timeout, 2m unless set", Usage: usage}
}

// ctlEnv is what a verb works with.
type ctlEnv struct {
	client *ctl.Client
	json   bool
	colour bool
	// terminal: stdout is a terminal (and not --json): program bytes that
	// would drive it are escaped.
	terminal bool
	names    []string // positional arguments
	follow   bool
	n        int
	out      *bufio.Writer
	// top's
	sort     string
	interval time.Duration
	// start's, restart's and scale's
	restart ctl.RestartOptions
	wait    ctl.WaitOptions
	// stop's and restart's
	withDependents bool
}

// usageError is a command line mistake: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// ctlRun reads v's flags, sets up the client, runs v and turns its error
// into an exit code.
func ctlRun(c *cli.Context, v ctlVerb) int {
	e := &ctlEnv{out: bufio.NewWriter(os.Stdout), n: -1, names: c.Args().Slice()}
	if v.options != nil {
		if err := v.options(c, e); err != nil {
			fmt.Fprintf(os.Stderr, "supervisectl %s: %v\n", v.name, err)
			return ctlExitUsage
		}
	}
	socket, trust := ctlSocket(c, &e.json)
	e.terminal = !e.json && isTerminal(os.Stdout)
	e.colour = e.terminal && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
	e.client = ctl.Dial(socket, trust...)
	defer e.client.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := v.run(ctx, e)
	if ferr := e.out.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	return ctlExit(v.name, err, ctx.Err() != nil, e.follow)
}

// ctlSocket reads the global flags, wherever on the command line they
// were given: the socket (else a dev runner's of this folder or one above,
// else the default), the server uids to trust, and --json into *json.
func ctlSocket(c *cli.Context, json *bool) (socket string, trust []ctl.DialOption) {
	for _, x := range c.Lineage() {
		*json = *json || x.Bool("json")
		if socket == "" {
			socket = x.String("socket")
		}
		for _, uid := range x.IntSlice("server-uid") {
			trust = append(trust, ctl.TrustServerUID(uid))
		}
	}
	if socket == "" && os.Getenv("SUPERVISE_SOCKET") == "" {
		if wd, err := os.Getwd(); err == nil {
			socket = ctl.FindProjectSocket(wd)
		}
	}
	if socket == "" {
		socket = ctl.DefaultSocketPath()
	}
	return socket, trust
}

// ctlExit prints why verb failed and returns its exit code; interrupted
// says ^C (or SIGTERM) came, which ends a follower without an error.
func ctlExit(verb string, err error, interrupted, follow bool) int {
	var ue *ctl.UnreachableError
	var untrusted *ctl.UntrustedServerError
	var usage usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "supervisectl %s: %v\nRun 'supervisectl %s --help' for usage.\n", verb, err, verb)
		return ctlExitUsage
	case errors.As(err, &ue), errors.As(err, &untrusted):
		fmt.Fprintf(os.Stderr, "supervisectl: %v\n", err)
		return ctlExitUnreachable
	case errors.Is(err, context.Canceled) && interrupted:
		if follow {
			return 0 // ^C is how a follower ends
		}
		fmt.Fprintf(os.Stderr, "supervisectl %s: interrupted\n", verb)
		return ctlExitInterrupted
	}
	fmt.Fprintf(os.Stderr, "supervisectl %s: %v\n", verb, err)
	return ctlExitFailed
}

func ctlStatus(ctx context.Context, e *ctlEnv) error {
	if e.json {
		// The server's array is printed as is: no decoding and encoding
		// 1,000 programs again in a process that lives a few milliseconds.
		raw, err := e.client.StatusJSON(ctx, e.names)
		if err != nil {
			return err
		}
		if isTerminal(os.Stdout) {
			var b bytes.Buffer
			if err := json.Indent(&b, raw, "", "  "); err == nil {
				raw = b.Bytes()
			}
		}
		e.out.Write(raw)
		return e.out.WriteByte('\n')
	}
	st, err := e.client.Status(ctx, e.names)
	if err != nil {
		return err
	}
	none := ctlfmt.NoInstances(e.names, st)
	if len(st) == 0 && len(none) == 0 {
		_, err := fmt.Fprintln(e.out, "no programs")
		return err
	}
	if len(st) > 0 {
		if err := ctlfmt.StatusTable(e.out, st, time.Now(), e.colour); err != nil {
			return err
		}
	}
	for _, n := range none {
		if _, err := fmt.Fprintf(e.out, "%s: 0 instances (scaled to 0)\n", n); err != nil {
			return err
		}
	}
	return statusUpgradeLine(ctx, e)
}

// ctlAct is a verb that acts on the programs named and returns nothing:
// start, stop, restart. With --json it reports each instance touched.
func ctlAct(done string, call func(ctx context.Context, e *ctlEnv) error) verbFunc {
	return func(ctx context.Context, e *ctlEnv) error {
		if len(e.names) == 0 {
			return usagef("name at least one program (or all)")
		}
		return reportAction(ctx, e, e.names, done, func() error { return call(ctx, e) })
	}
}

// ctlBare is a verb that takes no arguments and returns nothing: reload,
// shutdown.
func ctlBare(verb, done string, call func(c *ctl.Client, ctx context.Context) error) verbFunc {
	return func(ctx context.Context, e *ctlEnv) error {
		if len(e.names) > 0 {
			return usagef("%s takes no arguments", verb)
		}
		if err := call(e.client, ctx); err != nil {
			return err
		}
		return printDone(e, done)
	}
}

// instanceReport is what --json says of each instance a start, stop,
// restart or scale touched: its process before and after the command, and
// where it stands when the command returned.
type instanceReport struct {
	Name      string `json:"name"`
	PidBefore int    `json:"pid_before"`
	Pid       int    `json:"pid"`
	// Replaced: it runs another process than before (a start, a restart,
	// an instance added); Stopped: it ran one and runs none now.
	Replaced bool   `json:"replaced"`
	Stopped  bool   `json:"stopped"`
	Added    bool   `json:"added,omitempty"`   // by a scale
	Removed  bool   `json:"removed,omitempty"` // by a scale
	State    string `json:"state"`
	Ready    *bool  `json:"ready,omitempty"`
	Message  string `json:"message,omitempty"`
}

type actionReport struct {
	OK        bool             `json:"ok"`
	Error     string           `json:"error,omitempty"`
	Instances []instanceReport `json:"instances"`
}

// reportAction runs act; with --json it prints, whether act failed or not,
// what happened to each instance of the programs named (from the status
// before and after), else done as before.
func reportAction(ctx context.Context, e *ctlEnv, programs []string, done string, act func() error) error {
	if !e.json {
		if err := act(); err != nil {
			return err
		}
		return printDone(e, done)
	}
	before, err := e.client.Status(ctx, nil)
	if err != nil {
		return err
	}
	actErr := act()
	after, err := e.client.Status(ctx, nil)
	if err != nil {
		return errors.Join(actErr, err)
	}
	rep := actionReport{OK: actErr == nil, Instances: instanceReports(programs, before, after)}
	if actErr != nil {
		rep.Error = actErr.Error()
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	e.out.Write(append(b, '\n'))
	return actErr
}

// instanceReports pairs the instances of programs (names of programs or
// instances, or "all") in two status lists.
func instanceReports(programs []string, before, after []ctl.ProgramStatus) []instanceReport {
	named := func(name string) bool {
		for _, p := range programs {
			if p == "all" || name == p || strings.HasPrefix(name, p+":") {
				return true
			}
		}
		return false
	}
	was := map[string]ctl.ProgramStatus{}
	for _, st := range before {
		if named(st.Name) {
			was[st.Name] = st
		}
	}
	var out []instanceReport
	for _, st := range after {
		if !named(st.Name) {
			continue
		}
		b, existed := was[st.Name]
		delete(was, st.Name)
		out = append(out, instanceReport{
			Name: st.Name, PidBefore: b.Pid, Pid: st.Pid, Added: !existed,
			Replaced: st.Pid != 0 && st.Pid != b.Pid, Stopped: b.Pid != 0 && st.Pid == 0,
			State: st.State, Ready: st.Ready, Message: st.Message,
		})
	}
	for _, b := range before {
		if _, gone := was[b.Name]; gone {
			out = append(out, instanceReport{Name: b.Name, PidBefore: b.Pid, Stopped: b.Pid != 0, Removed: true, State: "Removed"})
		}
	}
	return out
}

// ctlScale: scale web=3 worker=1.
func ctlScale(ctx context.Context, e *ctlEnv) error {
	if len(e.names) == 0 {
		return usagef("name at least one program and its instances, like web=3")
	}
	counts := map[string]int{}
	for _, a := range e.names {
		name, num, ok := strings.Cut(a, "=")
		n, err := strconv.Atoi(num)
		if !ok || name == "" || err != nil || n < 0 {
			return usagef("%q: want NAME=N, N a number of instances (0 or more)", a)
		}
		if _, dup := counts[name]; dup {
			return usagef("%s is named twice", name)
		}
		counts[name] = n
	}
	programs := slices.Sorted(maps.Keys(counts))
	if e.json {
		return reportAction(ctx, e, programs, "", func() error { return e.client.Scale(ctx, counts, e.wait) })
	}
	if err := e.client.Scale(ctx, counts, e.wait); err != nil {
		return err
	}
	_, err := fmt.Fprintf(e.out, "scaled: %s (until a reload changes their instances)\n", strings.Join(e.names, ", "))
	return err
}

func printDone(e *ctlEnv, done string) error {
	if e.json {
		_, err := e.out.WriteString(`{"ok":true}` + "\n")
		return err
	}
	if len(e.names) > 0 {
		done += ": " + strings.Join(e.names, ", ")
	}
	_, err := fmt.Fprintln(e.out, done)
	return err
}

func ctlSignal(ctx context.Context, e *ctlEnv) error {
	if len(e.names) < 2 {
		return usagef("want a signal and at least one program: signal HUP web")
	}
	sig, err := unixsig.Parse(e.names[0])
	if err != nil {
		return usageError{err.Error()}
	}
	e.names = e.names[1:]
	if err := e.client.Signal(ctx, sig, e.names); err != nil {
		return err
	}
	return printDone(e, "sent SIG"+unixsig.Name(sig))
}

func ctlLogs(ctx context.Context, e *ctlEnv) error {
	enc := json.NewEncoder(e.out)
	width := 0
	for _, n := range e.names {
		width = max(width, len(n))
	}
	return e.client.Logs(ctx, e.names, e.n, e.follow, func(l logs.Line) error {
		var err error
		if e.json {
			err = enc.Encode(struct {
				Program string    `json:"program"`
				Stream  string    `json:"stream"`
				Time    time.Time `json:"time"`
				Text    string    `json:"text"`
				Partial bool      `json:"partial,omitempty"`
			}{l.Program, l.Stream, l.Time, l.Text, l.Partial})
		} else {
			width = max(width, len(l.Program))
			err = ctlfmt.LogLine(e.out, l, width, e.colour, e.terminal)
		}
		return flushIf(e, err)
	})
}

func ctlWhy(ctx context.Context, e *ctlEnv) error {
	ws, err := e.client.Why(ctx, e.names)
	if err != nil {
		return err
	}
	if e.json {
		enc := json.NewEncoder(e.out)
		if isTerminal(os.Stdout) {
			enc.SetIndent("", "  ")
		}
		return enc.Encode(ws)
	}
	if len(ws) == 0 {
		_, err := fmt.Fprintln(e.out, "no programs")
		return err
	}
	return ctlfmt.Why(e.out, ws, e.colour, e.terminal)
}

func ctlEvents(ctx context.Context, e *ctlEnv) error {
	if len(e.names) > 0 {
		return usagef("events takes no program names")
	}
	enc := json.NewEncoder(e.out)
	return e.client.Events(ctx, e.follow, func(ev ctl.Event) error {
		var err error
		if e.json {
			err = enc.Encode(ev)
		} else {
			err = ctlfmt.Event(e.out, ev, e.colour)
		}
		return flushIf(e, err)
	})
}

// flushIf flushes each entry of a followed stream, so it shows as it
// happens; history alone is written in one go.
func flushIf(e *ctlEnv, err error) error {
	if err != nil || !e.follow {
		return err
	}
	return e.out.Flush()
}
