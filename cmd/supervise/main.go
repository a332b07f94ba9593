// Command supervise is a process supervisor for Linux: PID 1 in a container,
// the supervisor of a box's services, and a dev runner in a project folder.
// Invoked as supervisectl it is the control client.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/supervise-dev/supervise/cmd/internal/execcmd"
	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
	"github.com/supervise-dev/supervise/internal/rungroup"
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
	// A new binary checked by the running one before an upgrade in place.
	if len(os.Args) == 2 && os.Args[1] == "upgrade-probe" {
		os.Exit(upgradeProbeMain())
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
		&cli.IntFlag{Name: "port", Aliases: []string{"p"}, Usage: "Procfile: PORT of the first process type (default PORT of .env, else of the shell, else 5000; +100 per type)"},
		&cli.StringFlag{Name: "restart", Usage: "Procfile: restart policy of every process (default never)"},
		&cli.BoolFlag{Name: "keep-running", Usage: "Procfile: keep the others running when one process ends"},
		&cli.StringSliceFlag{Name: "can-die", Usage: "Procfile: these process types may end without ending the set (repeat, or NAME1,NAME2)"},
		&cli.StringSliceFlag{Name: "auto-restart", Usage: "Procfile: restart these process types whenever they exit (repeat, or NAME1,NAME2)"},
		&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "Procfile: env files to read instead of ./.env, in order (repeat, or FILE1,FILE2)"},
		&cli.BoolFlag{Name: "timestamps", Aliases: []string{"t"}, Usage: "start each console line with the time, as foreman does"},
		&cli.BoolFlag{Name: "tty", Usage: "dev runner: give each process a pseudo-terminal for its output, as overmind does (programs print their colours)"},
		&cli.BoolFlag{Name: "watch", Usage: "Procfile: restart every process when a file under the Procfile's folder changes (not node_modules, log/, tmp/, .git or what .gitignore ignores)"},
		&cli.BoolFlag{Name: "hold-ports", Usage: "Procfile: supervise binds each process's PORT and passes it as fd 3 (LISTEN_FDS, systemd's socket activation), so restarts refuse no connection; for servers that take it (a server that binds PORT itself then fails: address in use)"},
		&cli.StringSliceFlag{Name: "watch-path", Usage: "Procfile: watch this path instead of the whole folder (repeat; implies --watch)"},
		&cli.StringSliceFlag{Name: "watch-ignore", Usage: "Procfile: leave out of the watch what matches this glob (repeat; \"**\" spans folders)"},
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
	if c.IsSet("port") {
		// 0 would mean "not given" below.
		if p := c.Int("port"); p < 1 || p > 65535 {
			return opts, fmt.Errorf("--port: must be from 1 to 65535 (got %d)", p)
		}
		opts.BasePort = c.Int("port")
	}
	opts.ShellPort = os.Getenv("PORT")
	opts.Restart = config.RestartPolicy(c.String("restart"))
	opts.KeepRunning = c.Bool("keep-running")
	opts.Watch = c.Bool("watch")
	opts.HoldPorts = c.Bool("hold-ports")
	opts.WatchPaths = c.StringSlice("watch-path")
	opts.WatchIgnore = c.StringSlice("watch-ignore")
	opts.EnvFiles = commaList(c.StringSlice("env"))
	opts.CanDie = commaList(c.StringSlice("can-die"))
	opts.AutoRestart = commaList(c.StringSlice("auto-restart"))
	return opts, nil
}

// commaList is the values of a repeatable flag, each also split at
// commas; nil for none.
func commaList(values []string) []string {
	var out []string
	for _, v := range values {
		for x := range strings.SplitSeq(v, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
	}
	return out
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

// wantColor: colour on a terminal, unless NO_COLOR is set or TERM says
// the terminal takes none.
func wantColor(terminal bool) bool {
	return terminal && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

func runCommand(c *cli.Context) int { return runPrograms(c, nil) }

// runPrograms is `supervise run`, or `supervise start NAME…` when only
// names some programs: those and what they depend on.
func runPrograms(c *cli.Context, only []string) int {
	// Started with signals blocked, we would start every program so:
	// then this binary runs again, with none blocked, before anything
	// else (an upgrade's state and descriptors cross that exec as they
	// are).
	if err := unixsig.StartUnblocked(); err != nil {
		fmt.Fprintln(os.Stderr, "supervise: warning: started with signals blocked, which the programs inherit:", err)
	}
	// After an upgrade in place: the old binary's state and descriptors.
	inherited, upErr := inheritedUpgrade()
	// What we inherited (a descriptor of the shell that started us) must
	// not reach the programs, which may run as other users.
	if err := proc.CloseOnExecFrom(3); err != nil {
		fmt.Fprintln(os.Stderr, "supervise:", err)
		return exitFailed
	}
	if upErr != nil {
		return giveBack(inherited, upErr)
	}
	// Where we were started: an upgrade execs the new binary from here,
	// so that its --root and relative paths mean what they meant.
	startDir, _ = os.Getwd()
	var carried *config.Config
	if inherited != nil {
		carried = inherited.Supervisor.Config
	}
	r, err := loadRun(c, only, carried)
	if err != nil {
		if inherited != nil {
			return giveBack(inherited, err)
		}
		printConfigError(err)
		return exitUsage
	}
	defer r.openLog(c)() // registered first: runs last, after everything logged
	log := r.log
	slog.SetDefault(log)

	opts := proc.Options{Logger: log, LimitsBestEffort: r.devRunner}
	if inherited != nil {
		opts.Adopt, opts.AdoptFiles = &inherited.Runtime, inherited.files
	}
	rt, err := proc.New(opts)
	if err != nil {
		log.Error("starting the sandbox runtime", "err", err)
		return giveBack(inherited, err)
	}
	defer rt.Close()
	r.trim = newIdleTrim(log)
	defer r.trim.stop()
	if r.sup, err = r.newSupervisor(c, rt, inherited); err != nil {
		log.Error("starting the supervisor", "err", err)
		return giveBack(inherited, err)
	}
	for _, sw := range rt.Swept() {
		r.sup.Note(sw.Program, fmt.Sprintf("swept the leftovers of a dead supervisor: cgroup %s, %d process(es) killed", sw.Cgroup, sw.Killed))
	}

	r.up = &upgrader{rt: rt, sup: r.sup, log: log, flushLog: r.flushLog}
	socket := r.socketPath(c)
	srv := ctl.NewServer(ctl.ServerConfig{Path: socket, Group: r.cfg.Supervisor.SocketGroup, Backend: backend{r.sup, r.up}, Logger: log,
		MaxConns: r.cfg.Supervisor.MaxConnections, MaxFollowers: r.cfg.Supervisor.MaxFollowers, OnRequest: r.trim.touched})
	if inherited != nil {
		err = srv.Adopt(inherited.controlFile())
	} else {
		err = srv.Listen()
	}
	if err != nil {
		log.Error("control socket", "err", err)
		return giveBack(inherited, err)
	}
	// Closed (the socket removed) only once every actor has returned: the
	// supervisor has stopped the programs by then.
	defer srv.Close()
	ms, httpAddr, err := r.listenMetrics(c, srv, inherited)
	if err != nil {
		log.Error("metrics listener", "err", err)
		return giveBack(inherited, err)
	}
	r.up.srv, r.up.ms = srv, ms
	if inherited != nil {
		var reload func() (supervisor.Changes, error)
		if carried != nil {
			reload = func() (supervisor.Changes, error) { return r.sup.ReloadChanges(context.Background()) }
		}
		inherited.adopted(r.up, reload)
	}

	code := exitFailed
	g := r.actors(srv, ms, &code)
	running := []any{"config", r.file, "socket", socket, "http", httpAddr, "programs", len(r.cfg.Programs), "pid", os.Getpid()}
	if inherited != nil {
		running = append(running, "after_upgrade", true) // a dev runner does not greet again
	}
	log.Info("supervise running", running...)
	_ = g.Run() // no actor ends with an error: the supervisor's code says it all
	return code
}

// run is what runPrograms sets up, for the actors to share.
type run struct {
	file      string
	cfg       *config.Config
	load      func(path string) (*config.Config, error)
	devRunner bool
	log       *slog.Logger
	flushLog  func() // writes what the log has queued
	sup       *supervisor.Supervisor
	up        *upgrader
	trim      *idleTrim

	// stop is the supervisor's context: it ends with the first stop
	// signal, or when the supervisor has ended on its own. The control
	// server, the metrics listener and the config watchers stop serving
	// with it too, as the shutdown begins; their goroutines live on, idle,
	// until the group ends.
	stop   context.Context
	cancel context.CancelFunc
	// resized asks followResizes to pass a resize of our terminal on to
	// the --tty programs; one pending request stands for any number.
	resized chan struct{}
	// upgradeAsked asks followUpgrades for an upgrade in place (SIGUSR2);
	// one may wait while one is under way.
	upgradeAsked chan struct{}
}

// loadRun reads the config to run; its error is for printConfigError.
// After an upgrade in place the config is the one carried across (the
// programs run under it), checked here; the file is read only once they
// are taken over, as a reload.
func loadRun(c *cli.Context, only []string, carried *config.Config) (*run, error) {
	if err := enterRoot(c); err != nil {
		return nil, err
	}
	var file string
	var err error
	if carried != nil {
		if err := carried.CheckCarried(); err != nil {
			return nil, fmt.Errorf("the config handed over: %w", err)
		}
		file = carried.File
	} else if file, err = findConfig(c, only == nil); err != nil {
		return nil, err
	}
	opts, err := procfileOptions(c)
	if err != nil {
		return nil, err
	}
	load := func(path string) (*config.Config, error) {
		cfg, err := config.LoadWithOptions(path, opts)
		if err == nil && len(only) > 0 {
			err = selectPrograms(cfg, only)
		}
		return cfg, err
	}
	cfg := carried
	if cfg == nil {
		if cfg, err = load(file); err != nil {
			return nil, err
		}
	}
	return &run{
		file: file, cfg: cfg, load: load,
		// A dev runner: a Procfile, or a project folder's config found
		// without naming it.
		devRunner: cfg.Procfile || c.String("config") == "" && (only != nil || c.Args().Len() == 0),
	}, nil
}

// openLog sets r.log, supervise's own log; close flushes it. It goes
// through a queue: the supervisor logs state changes under its lock,
// which a slow reader of stderr must not hold up.
func (r *run) openLog(c *cli.Context) (close func()) {
	format := cmp.Or(c.String("log-format"), r.cfg.Supervisor.LogFormat)
	level := cmp.Or(c.String("log-level"), r.cfg.Supervisor.LogLevel)
	stderr := newQueuedWriter(os.Stderr, 1<<20)
	r.log = newLogger(stderr, format, level)
	r.flushLog = stderr.Flush
	// A dev runner speaks in short human lines among the programs'
	// output, unless a log format was asked for.
	if !r.devRunner || c.String("log-format") != "" {
		return func() { stderr.Close() }
	}
	stdout := newQueuedWriter(os.Stdout, 1<<20)
	var names []string
	for _, p := range r.cfg.Programs {
		names = append(names, supervisor.InstanceKeys(p)...)
	}
	r.log = slog.New(newHumanHandler(stdout, names, c.Bool("timestamps")))
	r.flushLog = func() {
		stdout.Flush()
		stderr.Flush()
	}
	return func() {
		stdout.Close()
		stderr.Close()
	}
}

func (r *run) newSupervisor(c *cli.Context, rt *proc.Runtime, inherited *upgradeState) (*supervisor.Supervisor, error) {
	var adopt *supervisor.Handover
	var files map[int]*os.File
	if inherited != nil {
		adopt, files = &inherited.Supervisor, inherited.files
	}
	return supervisor.New(supervisor.Options{
		Adopt:      adopt,
		AdoptFiles: files,
		Config:     r.cfg,
		Load:       r.load,
		Runtime:    rt,
		Logger:     r.log,
		Console:    os.Stdout,
		Color:      wantColor(isTerminal(os.Stdout)),
		Terminal:   isTerminal(os.Stdout),
		Timestamps: c.Bool("timestamps"),
		OneStream:  r.devRunner,
		Tty:        c.Bool("tty"),
		// A process gets this long to say something when a neighbour's
		// end stops the set.
		StartupGrace: devRunnerStartupGrace(r.devRunner),
		Ready:        r.trim.startup,
	})
}

// socketPath is the control socket's: --socket, the config's, a dev
// runner's per project (which supervisectl finds from the folder), else
// the default.
func (r *run) socketPath(c *cli.Context) string {
	if socket := cmp.Or(c.String("socket"), r.cfg.Supervisor.Socket); socket != "" {
		return socket
	}
	if r.devRunner {
		return ctl.ProjectSocketPath(r.cfg.Dir)
	}
	return ctl.DefaultSocketPath()
}

// listenMetrics opens the metrics listener when one is asked for (nil
// otherwise) and says its address.
func (r *run) listenMetrics(c *cli.Context, srv *ctl.Server, inherited *upgradeState) (*metrics.Server, string, error) {
	addr := cmp.Or(c.String("http"), r.cfg.Supervisor.HTTP)
	var ln net.Listener
	if inherited != nil {
		var err error
		if ln, err = inherited.httpListener(); err != nil {
			return nil, "", err
		}
	}
	if addr == "" && ln == nil {
		return nil, "", nil
	}
	h := metrics.NewHandler(r.sup, metrics.Build{Version: version.Version, GoVersion: runtime.Version()})
	if tf := r.cfg.Supervisor.HTTPTokenFile; tf != "" {
		// Checked when the config was read; read again here, as late as
		// can be. The token itself is never logged.
		token, err := config.ReadTokenFile(tf)
		if err != nil {
			return nil, "", fmt.Errorf("http_token_file: %w", err)
		}
		h.Control(srv.VerbHandler(), token)
		r.log.Info("HTTP listener serves the control verbs to the token's holder", "token_file", tf)
	}
	// A scrape maps pages back as a control request does.
	served := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.trim.touched()
		h.ServeHTTP(w, req)
	})
	if ln != nil {
		// The old binary's listener, which never stopped taking
		// connections: they waited in its backlog through the exec.
		ms := metrics.ListenOn(ln, served, r.log)
		ms.Track(srv.TrackListener)
		return ms, ms.Addr().String(), nil
	}
	ms, err := metrics.Listen(addr, served, r.log)
	if err != nil {
		return nil, "", err
	}
	// An upgrade's wait before the exec covers its requests and streams
	// as the socket's, and it stops accepting with the socket.
	ms.Track(srv.TrackListener)
	return ms, ms.Addr().String(), nil
}

// actors are the run's goroutines, one job each. The supervisor's end
// ends the run: the others then return, and Run returns once all have.
// The order of a shutdown:
//
//  1. a stop signal (or a control command, or the programs' end) makes
//     the supervisor stop; the first signal also ends stop, so the
//     control server, the metrics listener and the config watchers stop
//     serving at once;
//  2. the supervisor has stopped every program and returns its code;
//  3. the signal loop stops (a second signal until then forces the
//     stop), and the servers' and watchers' goroutines return;
//  4. runPrograms closes the control socket, then the runtime, then the
//     log.
func (r *run) actors(srv *ctl.Server, ms *metrics.Server, code *int) *rungroup.Group {
	r.stop, r.cancel = context.WithCancel(context.Background())
	r.up.stopping = r.stop // before any actor can start an upgrade
	var g rungroup.Group
	g.Add(func() error {
		*code = r.sup.Run(r.stop)
		r.log.Info("supervise exiting", "code", *code)
		return nil
	}, func(error) { r.cancel() })
	// Signals are taken before any actor runs: one sent as soon as we are
	// up must not find the default action.
	r.resized = make(chan struct{}, 1)
	r.upgradeAsked = make(chan struct{}, 1)
	r.addSignals(&g)
	r.addHelper(&g, r.followResizes)
	r.addHelper(&g, r.followUpgrades)
	r.addHelper(&g, func() {
		if err := srv.Serve(r.stop); err != nil {
			r.log.Error("control socket", "err", err)
		}
	})
	if ms != nil {
		r.addHelper(&g, func() {
			if err := ms.Serve(r.stop); err != nil {
				r.log.Error("metrics listener", "err", err)
			}
		})
	}
	if r.cfg.Supervisor.WatchConfig {
		for _, f := range r.configFiles() {
			r.addHelper(&g, func() { r.watchConfig(f) })
		}
	}
	return &g
}

// addHelper adds an actor that runs serve, which returns with stop, and
// then waits for the group's end: a helper that fails or gives up (a
// listener's error, a watcher that cannot watch) leaves the supervisor
// running, as only the supervisor's end ends a run.
func (r *run) addHelper(g *rungroup.Group, serve func()) {
	done := make(chan struct{})
	g.Add(func() error {
		serve()
		<-done
		return nil
	}, func(error) {
		r.cancel()
		close(done)
	})
}

// configFiles are the files whose change reloads the config: the file,
// what it includes, and the programs' env files (a Procfile's .env).
func (r *run) configFiles() []string {
	files := append([]string{r.file}, r.cfg.Sources...)
	for _, p := range r.cfg.Programs {
		for _, f := range p.EnvFiles {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	return files
}

// watchConfig reloads the config whenever f changes, until stop. The
// directory is watched, so editors that write and rename and ConfigMap
// symlink swaps are seen.
func (r *run) watchConfig(f string) {
	err := watch.File(r.stop, f, 200*time.Millisecond, nil, func() {
		r.log.Info("config changed; reloading", "file", f)
		if err := r.sup.Reload(r.stop); err != nil {
			r.log.Error("reload failed; the running config stays", "err", err)
		}
	})
	if err != nil && r.stop.Err() == nil {
		r.log.Warn("not watching a config file", "file", f, "err", err)
	}
}

// addSignals takes every catchable signal and adds the actor that acts on
// them until the group ends. As PID 1 the Go runtime's default for a
// signal nobody asked for is to die (its handlers defeat the kernel's
// init protection), so every catchable signal is asked for. signal.Ignore
// would be inherited by the programs as SIG_IGN; a handled signal is
// reset at exec.
func (r *run) addSignals(g *rungroup.Group) {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, catchable()...)
	// A resize before we listened (between the binaries of an upgrade in
	// place) reached nobody: the --tty programs take the size of now.
	r.resizeTerminals()
	done := make(chan struct{})
	g.Add(func() error {
		defer signal.Stop(sigs)
		stopping := false
		for {
			select {
			case sig := <-sigs:
				stopping = r.onSignal(sig, stopping)
			case <-done:
				return nil
			}
		}
	}, func(error) { close(done) })
}

// resizeTerminals asks followResizes for a resize without waiting: a
// signal to a program in a sandbox goes through its init and may take a
// while, and must not hold up a Ctrl-C behind it. Requests while one is
// pending (a window dragged wider) make one.
func (r *run) resizeTerminals() {
	select {
	case r.resized <- struct{}{}:
	default:
	}
}

// followResizes resizes the --tty programs' terminals on each request,
// until stop.
func (r *run) followResizes() {
	for {
		select {
		case <-r.resized:
			r.sup.ResizeTerminals()
		case <-r.stop.Done():
			return
		}
	}
}

// followUpgrades upgrades in place on each request (SIGUSR2), until
// stop, off the signal loop: an upgrade may wait its freeze timeout for
// busy workers, and a SIGTERM or SIGHUP meanwhile must not wait behind it
// (SIGTERM ends stop, which ends the upgrade's wait).
func (r *run) followUpgrades() {
	for {
		select {
		case <-r.upgradeAsked:
			r.upgradeOnSignal()
		case <-r.stop.Done():
			return
		}
	}
}

// onSignal acts on sig and says whether the shutdown has begun.
// SIGTERM, SIGINT and SIGQUIT stop everything (as does a dev runner's
// SIGHUP, from its closed terminal, as Ctrl-C); a second SIGINT or
// SIGQUIT kills what is still stopping. A service's SIGHUP reloads.
func (r *run) onSignal(sig os.Signal, stopping bool) bool {
	switch {
	case sig == syscall.SIGUSR2 && !stopping:
		select {
		case r.upgradeAsked <- struct{}{}:
		default:
			r.log.Info("SIGUSR2: an upgrade in place is asked for already")
		}
	case sig == syscall.SIGWINCH:
		// Our terminal changed size: so do the --tty programs'.
		r.resizeTerminals()
	case sig != syscall.SIGTERM && sig != syscall.SIGINT && sig != syscall.SIGHUP && sig != syscall.SIGQUIT:
		r.log.Debug("signal ignored", "signal", sig.String())
	case sig == syscall.SIGHUP && !r.devRunner:
		// A dev runner's reload stays on supervisectl and the watch.
		if err := r.sup.Reload(r.stop); err != nil {
			r.log.Error("reload failed", "err", err)
		}
	case !stopping:
		r.log.Info("stopping everything", "signal", sig.String())
		r.cancel()
		return true
	case sig == syscall.SIGINT || sig == syscall.SIGQUIT:
		r.log.Warn("second signal: killing everything", "signal", sig.String())
		r.sup.Kill()
	}
	return stopping
}

// devRunnerStartupGrace is Options.StartupGrace: a second in the dev
// runner, none for a service.
func devRunnerStartupGrace(devRunner bool) time.Duration {
	if devRunner {
		return time.Second
	}
	return 0
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
