// Command supervise is a process supervisor for Linux: PID 1 in a container,
// the supervisor of a box's services, and a dev runner in a project folder.
// Invoked as supervisectl it is the control client.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/internal/execcmd"
	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/internal/version"
	"github.com/supervise-dev/supervise/metrics"
	"github.com/supervise-dev/supervise/pid1"
	"github.com/supervise-dev/supervise/proc"
	"github.com/supervise-dev/supervise/supervisor"
	"github.com/supervise-dev/supervise/watch"
)

// Exit codes of supervise itself (a supervised program's code passes through).
const (
	exitUsage  = 2 // bad flags or a bad config: nothing started
	exitFailed = 1
)

func main() {
	// The one dispatch point of the re-executed sandbox init: it must run
	// before anything else in this process.
	if proc.IsInit() {
		os.Exit(proc.InitMain())
	}
	if pid1.IsListenShim() {
		os.Exit(pid1.ListenShimMain())
	}
	if filepath.Base(os.Args[0]) == "supervisectl" {
		os.Exit(ctlMain(os.Args))
	}
	// An init's start-up time is the container's: exec skips the CLI.
	if len(os.Args) > 1 && os.Args[1] == "exec" {
		if code, ok := execcmd.Main(os.Args[2:], "exec"); ok {
			os.Exit(code)
		}
	}
	os.Exit(runApp(os.Args))
}

func runApp(args []string) int {
	code := 0
	app := superviseApp(&code)
	if err := app.Run(flagsFirst(app, args, runsCommand)); err != nil {
		fmt.Fprintln(os.Stderr, "supervise:", err)
		return exitUsage
	}
	return code
}

// runsCommand says which commands take a command line to run as their
// arguments: the words after its first one are the command's, flags too.
func runsCommand(c *cli.Command) bool { return c.Name == "exec" || c.Name == "run-once" }

// superviseApp is the command tree of supervise; a command's exit code
// goes to *code.
func superviseApp(code *int) *cli.App {
	return &cli.App{
		Name:                 "supervise",
		Usage:                "run programs in sandboxes, restart them with the kubelet's crash backoff",
		Version:              version.Version,
		EnableBashCompletion: true,
		Flags:                runFlags(),
		Action: func(c *cli.Context) error { // bare `supervise` in a project folder
			*code = runCommand(c)
			return nil
		},
		Commands: []*cli.Command{
			{
				Name:  "run",
				Usage: "supervise the programs of a config file (supervise.toml or a Procfile)",
				Flags: runFlags(),
				Action: func(c *cli.Context) error {
					*code = runCommand(c)
					return nil
				},
			},
			{
				Name:      "check",
				Usage:     "validate a config file and print every problem as file:line: key: message",
				Flags:     []cli.Flag{configFlag()},
				ArgsUsage: "[FILE]",
				Action: func(c *cli.Context) error {
					*code = checkCommand(c)
					return nil
				},
			},
			{
				Name:      "start",
				Usage:     "run only the named programs (and what they depend on), as foreman's start: supervise start web worker",
				Flags:     runFlags(),
				ArgsUsage: "NAME...",
				Action: func(c *cli.Context) error {
					if c.Args().Len() == 0 {
						return errors.New("start: name at least one program (or run `supervise` for all)")
					}
					*code = runPrograms(c, c.Args().Slice())
					return nil
				},
			},
			runOnceCommand(),
			exportCommand(),
			importCommand(),
			execCommand(),
			ctlCommand(),
		},
		ExitErrHandler: func(c *cli.Context, err error) {},
	}
}

func configFlag() cli.Flag {
	return &cli.StringFlag{
		Name: "config", Aliases: []string{"c", "f"}, EnvVars: []string{"SUPERVISE_CONFIG"},
		Usage: "config file (default: ./supervise.toml, else ./Procfile); -f as foreman's",
	}
}

func runFlags() []cli.Flag {
	return []cli.Flag{
		configFlag(),
		&cli.StringFlag{Name: "socket", EnvVars: []string{"SUPERVISE_SOCKET"}, Usage: "control socket (overrides [supervisor] socket)"},
		&cli.StringFlag{Name: "http", EnvVars: []string{"SUPERVISE_HTTP"}, Usage: "serve /metrics, /healthz and /readyz on HOST:PORT (overrides [supervisor] http)"},
		&cli.StringFlag{Name: "log-format", Usage: "text or json (overrides [supervisor] log_format)"},
		&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "formation", Aliases: []string{"m"}, Usage: "Procfile: instances per process type, e.g. web=2,worker=1 (all=N for the rest)"},
		&cli.IntFlag{Name: "port", Aliases: []string{"p"}, Usage: "Procfile: PORT of the first process type (default $PORT, else 5000; +100 per type)"},
		&cli.StringFlag{Name: "restart", Usage: "Procfile: restart policy of every process (default never)"},
		&cli.BoolFlag{Name: "keep-running", Usage: "Procfile: keep the others running when one process ends"},
		&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "Procfile: env files to read instead of ./.env, in order (repeat, or FILE1,FILE2)"},
		&cli.BoolFlag{Name: "timestamps", Aliases: []string{"t"}, Usage: "start each console line with the time, as foreman does"},
		&cli.BoolFlag{Name: "watch", Usage: "Procfile: restart every process when a file under the Procfile's folder changes"},
		rootFlag(),
	}
}

// rootFlag is foreman's -d: the folder to run in.
func rootFlag() cli.Flag {
	return &cli.StringFlag{Name: "root", Aliases: []string{"d"}, Usage: "run in this folder (the app root), as if started there"}
}

// enterRoot changes to --root, when given.
func enterRoot(c *cli.Context) error {
	if d := c.String("root"); d != "" {
		if err := os.Chdir(d); err != nil {
			return fmt.Errorf("--root: %w", err)
		}
	}
	return nil
}

// procfileOptions are the dev-runner flags; zero for a TOML file.
func procfileOptions(c *cli.Context) (config.ProcfileOptions, error) {
	var opts config.ProcfileOptions
	f, err := config.ParseFormation(c.String("formation"))
	if err != nil {
		return opts, fmt.Errorf("--formation: %w", err)
	}
	opts.Formation = f
	opts.BasePort = c.Int("port")
	opts.Restart = config.RestartPolicy(c.String("restart"))
	opts.KeepRunning = c.Bool("keep-running")
	opts.Watch = c.Bool("watch")
	for _, f := range c.StringSlice("env") {
		for _, x := range strings.Split(f, ",") {
			if x != "" {
				opts.EnvFiles = append(opts.EnvFiles, x)
			}
		}
	}
	return opts, nil
}

// findConfig picks the file to run: -c, else the first argument (when
// args are files), else supervise.toml, else Procfile.
func findConfig(c *cli.Context, args bool) (string, error) {
	if f := c.String("config"); f != "" {
		return f, nil
	}
	if args && c.Args().Len() > 0 {
		return c.Args().First(), nil
	}
	for _, f := range []string{"supervise.toml", "Procfile"} {
		if _, err := os.Stat(f); err == nil {
			return f, nil
		}
	}
	return "", errors.New("no config: give -c FILE, or run in a folder with supervise.toml or a Procfile")
}

func checkCommand(c *cli.Context) int {
	file, err := findConfig(c, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervise:", err)
		return exitUsage
	}
	cfg, err := config.Load(file)
	if err != nil {
		printConfigError(err)
		return exitUsage
	}
	n := 0
	for _, p := range cfg.Programs {
		n += max(p.Instances, 1)
	}
	fmt.Printf("%s: ok (%d programs, %d instances)\n", file, len(cfg.Programs), n)
	return 0
}

func printConfigError(err error) {
	var list config.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Fprintln(os.Stderr, e)
		}
		fmt.Fprintf(os.Stderr, "%d problem(s); nothing started\n", len(list))
		return
	}
	fmt.Fprintln(os.Stderr, "supervise:", err)
}

func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil || level == "" {
		lv = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

func runCommand(c *cli.Context) int { return runPrograms(c, nil) }

// runPrograms is `supervise run`, or `supervise start NAME…` when only
// names some programs: those and what they depend on.
func runPrograms(c *cli.Context, only []string) int {
	// What we inherited (a descriptor of the shell that started us) must
	// not reach the programs, which may run as other users.
	if err := proc.CloseOnExecFrom(3); err != nil {
		fmt.Fprintln(os.Stderr, "supervise:", err)
		return exitFailed
	}
	if err := enterRoot(c); err != nil {
		fmt.Fprintln(os.Stderr, "supervise:", err)
		return exitUsage
	}
	file, err := findConfig(c, only == nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervise:", err)
		return exitUsage
	}
	opts, err := procfileOptions(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervise:", err)
		return exitUsage
	}
	load := func(path string) (*config.Config, error) {
		cfg, err := config.LoadWithOptions(path, opts)
		if err == nil && len(only) > 0 {
			err = selectPrograms(cfg, only)
		}
		return cfg, err
	}
	cfg, err := load(file)
	if err != nil {
		printConfigError(err)
		return exitUsage
	}
	format := cfg.Supervisor.LogFormat
	if f := c.String("log-format"); f != "" {
		format = f
	}
	level := cfg.Supervisor.LogLevel
	if l := c.String("log-level"); l != "" {
		level = l
	}
	// Our own log goes through a queue: the supervisor logs state changes
	// under its lock, which a slow reader of stderr must not hold up.
	stderr := newQueuedWriter(os.Stderr, 1<<20)
	defer stderr.Close() // registered first: runs last, after everything logged
	log := newLogger(stderr, format, level)
	// A dev runner (a Procfile, or a project folder's config found without
	// naming it) speaks in short human lines among the programs' output,
	// unless a log format was asked for.
	devRunner := cfg.Procfile || c.String("config") == "" && (only != nil || c.Args().Len() == 0)
	if devRunner && c.String("log-format") == "" {
		stdout := newQueuedWriter(os.Stdout, 1<<20)
		defer stdout.Close()
		var names []string
		for _, p := range cfg.Programs {
			names = append(names, supervisor.InstanceKeys(p)...)
		}
		log = slog.New(newHumanHandler(stdout, names, c.Bool("timestamps")))
	}
	slog.SetDefault(log)

	rt, err := proc.New(proc.Options{Logger: log, LimitsBestEffort: devRunner})
	if err != nil {
		log.Error("starting the sandbox runtime", "err", err)
		return exitFailed
	}
	defer rt.Close()

	sup, err := supervisor.New(supervisor.Options{
		Config:     cfg,
		Load:       load,
		Runtime:    rt,
		Logger:     log,
		Console:    os.Stdout,
		Color:      isTerminal(os.Stdout) && os.Getenv("NO_COLOR") == "",
		Terminal:   isTerminal(os.Stdout),
		Timestamps: c.Bool("timestamps"),
	})
	if err != nil {
		log.Error("starting the supervisor", "err", err)
		return exitFailed
	}
	for _, sw := range rt.Swept() {
		sup.Note(sw.Program, fmt.Sprintf("swept the leftovers of a dead supervisor: cgroup %s, %d process(es) killed", sw.Cgroup, sw.Killed))
	}

	socket := c.String("socket")
	if socket == "" {
		socket = cfg.Supervisor.Socket
	}
	if socket == "" && devRunner {
		// A dev runner, found in its folder: one supervisor per project,
		// which supervisectl finds from the folder.
		socket = ctl.ProjectSocketPath(cfg.Dir)
	}
	if socket == "" {
		socket = ctl.DefaultSocketPath()
	}
	srv := ctl.NewServer(ctl.ServerConfig{Path: socket, Group: cfg.Supervisor.SocketGroup, Backend: sup, Logger: log,
		MaxConns: cfg.Supervisor.MaxConnections, MaxFollowers: cfg.Supervisor.MaxFollowers})
	if err := srv.Listen(); err != nil {
		log.Error("control socket", "err", err)
		return exitFailed
	}
	defer srv.Close()

	// bg owns the goroutines below: the control server, the config
	// watchers and the signal loop; all end with ctx or runDone, and the
	// function returns only once they have (deferred calls run last first).
	var bg sync.WaitGroup
	defer bg.Wait()
	runDone := make(chan struct{})
	defer close(runDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bg.Go(func() { _ = srv.Serve(ctx) })

	httpAddr := c.String("http")
	if httpAddr == "" {
		httpAddr = cfg.Supervisor.HTTP
	}
	if httpAddr != "" {
		h := metrics.NewHandler(sup, metrics.Build{Version: version.Version, GoVersion: runtime.Version()})
		if tf := cfg.Supervisor.HTTPTokenFile; tf != "" {
			// Checked when the config was read; read again here, as late
			// as can be. The token itself is never logged.
			token, err := config.ReadTokenFile(tf)
			if err != nil {
				log.Error("http_token_file", "err", err)
				return exitFailed
			}
			h.Control(srv.VerbHandler(), token)
			log.Info("HTTP listener serves the control verbs to the token's holder", "token_file", tf)
		}
		ms, err := metrics.Listen(httpAddr, h, log)
		if err != nil {
			log.Error("metrics listener", "err", err)
			return exitFailed
		}
		httpAddr = ms.Addr().String()
		bg.Go(func() {
			if err := ms.Serve(ctx); err != nil {
				log.Error("metrics listener", "err", err)
			}
		})
	}

	// The config follows its file: the directory is watched, so editors that
	// write and rename and ConfigMap symlink swaps are seen.
	// env_file and a Procfile's .env count as part of the config.
	if cfg.Supervisor.WatchConfig {
		files := []string{file}
		for _, p := range cfg.Programs {
			for _, f := range p.EnvFiles {
				if !slices.Contains(files, f) {
					files = append(files, f)
				}
			}
		}
		for _, f := range files {
			bg.Go(func() {
				err := watch.File(ctx, f, 200*time.Millisecond, nil, func() {
					log.Info("config changed; reloading", "file", f)
					if err := sup.Reload(ctx); err != nil {
						log.Error("reload failed; the running config stays", "err", err)
					}
				})
				if err != nil && ctx.Err() == nil {
					log.Warn("not watching a config file", "file", f, "err", err)
				}
			})
		}
	}

	// As PID 1 the Go runtime's default for a signal nobody asked for is to
	// die (its handlers defeat the kernel's init protection), so every
	// catchable signal is asked for. signal.Ignore would be inherited by the
	// programs as SIG_IGN; a handled signal is reset at exec.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, catchable()...)
	defer signal.Stop(sigs)
	bg.Go(func() {
		stopping := false
		for {
			var sig os.Signal
			select {
			case sig = <-sigs:
			case <-runDone:
				return
			}
			switch {
			case sig != syscall.SIGTERM && sig != syscall.SIGINT && sig != syscall.SIGHUP && sig != syscall.SIGQUIT:
				log.Debug("signal ignored", "signal", sig.String())
			case sig == syscall.SIGHUP:
				if err := sup.Reload(ctx); err != nil {
					log.Error("reload failed", "err", err)
				}
			case !stopping:
				stopping = true
				log.Info("stopping everything", "signal", sig.String())
				cancel()
			case sig == syscall.SIGINT || sig == syscall.SIGQUIT:
				log.Warn("second signal: killing everything", "signal", sig.String())
				sup.Kill()
			}
		}
	})

	log.Info("supervise running", "config", file, "socket", socket, "http", httpAddr, "programs", len(cfg.Programs), "pid", os.Getpid())
	code := sup.Run(ctx)
	log.Info("supervise exiting", "code", code)
	return code
}

// catchable lists the signals supervise run takes, so that as PID 1 none
// of them kills it: every catchable one but SIGCHLD, which proc's reaper
// owns.
func catchable() []os.Signal { return unixsig.Catchable(syscall.SIGCHLD) }

// selectPrograms keeps the programs named in only and those they depend
// on, transitively. A Procfile's others are dropped, as foreman's `start
// web` runs web alone; a TOML file's others stay, not started
// (autostart = false), for supervisectl to start later.
func selectPrograms(cfg *config.Config, only []string) error {
	keep := map[string]bool{}
	var add func(name string) error
	add = func(name string) error {
		if keep[name] {
			return nil
		}
		p := cfg.Program(name)
		if p == nil {
			var names []string
			for _, q := range cfg.Programs {
				names = append(names, q.Name)
			}
			return fmt.Errorf("no program %q in %s (there are: %s)", name, cfg.File, strings.Join(names, ", "))
		}
		keep[name] = true
		for _, d := range p.DependsOn {
			if err := add(d); err != nil {
				return err
			}
		}
		return nil
	}
	for _, n := range only {
		if err := add(n); err != nil {
			return err
		}
	}
	if cfg.Procfile {
		cfg.Programs = slices.DeleteFunc(cfg.Programs, func(p *config.Program) bool { return !keep[p.Name] })
		cfg.Supervisor.ExitOn = slices.DeleteFunc(cfg.Supervisor.ExitOn, func(n string) bool { return !keep[n] })
		return nil
	}
	for _, p := range cfg.Programs {
		if !keep[p.Name] {
			p.Autostart = false
		}
	}
	return nil
}
