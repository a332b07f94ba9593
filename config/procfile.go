package config

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/supervise-dev/supervise/watch/glob"
)

// ProcfileOptions are the dev-runner settings of a Procfile run; the zero
// value gives foreman's defaults.
type ProcfileOptions struct {
	// BasePort is the PORT of the first process type; 0 means the PORT of
	// Env if it has one, else ShellPort, else 5000.
	BasePort int
	// ShellPort is the PORT of the environment supervise was started in
	// ("" for none), as foreman and honcho take it.
	ShellPort string
	// PortStep is added per process type, in file order; 0 means 100. Each
	// instance adds 1 (Program.Port).
	PortStep int
	// Env is the environment every process gets (a loaded .env).
	Env map[string]string
	// Formation is the number of instances per process type ("all" for
	// every type not named); a type at 0 is not started (autostart false).
	Formation map[string]int
	// Restart is the restart policy of every program; "" means never.
	Restart RestartPolicy
	// KeepRunning, when false, makes any program's end stop the whole set,
	// as foreman does: Supervisor.ExitOn lists every program.
	KeepRunning bool
	// EnvFiles, when set, are read in order instead of the .env beside
	// the Procfile (foreman's -e).
	EnvFiles []string
	// Watch restarts every process when a file under the Procfile's
	// directory changes; see devWatch for what is left out.
	Watch bool
	// WatchPaths, when set, are watched instead of the Procfile's folder
	// (relative ones from that folder); they imply Watch.
	WatchPaths []string
	// WatchIgnore are globs (package watch/glob) left out of the watch on
	// top of the dev runner's defaults and the folder's .gitignore.
	WatchIgnore []string
	// CanDie names process types whose end does not end the set (the
	// others' still does, unless KeepRunning).
	CanDie []string
	// AutoRestart names process types restarted whenever they exit
	// (restart always, with the crash backoff); their exit ends nothing.
	AutoRestart []string
	// HoldPorts gives each process type its PORT as a held socket
	// (listen = ["tcp://:PORT"]): for servers that take it from
	// LISTEN_FDS, restarts then refuse no connection.
	HoldPorts bool
}

// devWatchExcludes are what a developer never edits and a running app
// writes all the time: dependencies, and the log and tmp folders at the
// top of the project (Rails, Phoenix, Django and Node keep theirs there).
// .git and editor files are left out by package watch itself.
var devWatchExcludes = []string{"node_modules", "/log", "/tmp"}

// devWatch is the watch every process of a Procfile run gets from opts
// (nil without one): the folder of the Procfile, or WatchPaths, less
// devWatchExcludes, WatchIgnore and what the .gitignore ignores.
func devWatch(opts ProcfileOptions, dir string, bad func(line int, key, format string, args ...any)) *Watch {
	if !opts.Watch && len(opts.WatchPaths) == 0 {
		return nil
	}
	w := &Watch{Paths: []string{dir}, Exclude: slices.Clone(devWatchExcludes), GitIgnore: true, Debounce: DefaultWatchDebounce}
	if len(opts.WatchPaths) > 0 {
		w.Paths = nil
		for _, p := range opts.WatchPaths {
			if p == "" || strings.ContainsRune(p, 0) {
				bad(0, "watch_paths", "must be non-empty paths")
				continue
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			w.Paths = append(w.Paths, filepath.Clean(p))
		}
	}
	for _, g := range opts.WatchIgnore {
		if _, err := glob.Compile(g); err != nil {
			bad(0, "watch_ignore", "%q: %v", g, err)
			continue
		}
		w.Exclude = append(w.Exclude, g)
	}
	return w
}

// isZero reports whether no option was given; ShellPort does not count,
// as it is only the environment's PORT.
func (o *ProcfileOptions) isZero() bool {
	return o.BasePort == 0 && o.PortStep == 0 && o.Env == nil && o.Formation == nil && o.Restart == "" && !o.KeepRunning &&
		o.EnvFiles == nil && !o.Watch && o.WatchPaths == nil && o.WatchIgnore == nil && o.CanDie == nil && o.AutoRestart == nil && !o.HoldPorts
}

// ParseFormation reads a formation as foreman's -m takes it:
// "web=2,worker=1", with "all=N" for every process type not named.
// Spaces around names and counts are allowed; a count is 0 to 10000 (0
// leaves the type stopped). An empty string is no formation (nil). Every
// bad entry is reported at once.
func ParseFormation(s string) (map[string]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := map[string]int{}
	var errs []error
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, count, ok := strings.Cut(part, "=")
		name, count = strings.TrimSpace(name), strings.TrimSpace(count)
		n, err := strconv.Atoi(count)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("formation %q: want name=count, like web=2", part))
		case !procNameRE().MatchString(name):
			errs = append(errs, fmt.Errorf("formation %q: %q is not a process type name", part, name))
		case err != nil || n < 0 || n > 10000:
			errs = append(errs, fmt.Errorf("formation %q: the count must be a whole number from 0 to 10000", part))
		default:
			if _, dup := m[name]; dup {
				errs = append(errs, fmt.Errorf("formation %q: %s is given twice", part, name))
				continue
			}
			m[name] = n
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return m, nil
}

var procNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`) })

// ParseProcfile reads a Procfile: "name: command" lines, blank lines and
// # comments. Each command runs through /bin/sh -c, as foreman runs it, so
// $PORT and pipes work. Programs get dev defaults: restart never, output to
// the console, the directory of file, opts.Env plus PORT. Every problem is
// reported at once as an ErrorList.
func ParseProcfile(file string, data []byte, opts ProcfileOptions) (*Config, error) {
	if err := checkSize(file, data); err != nil {
		return nil, err
	}
	if err := checkLineBounds(file, data); err != nil {
		return nil, err
	}
	errs := &errorSet{}
	bad := func(line int, key, format string, args ...any) {
		errs.add(&Error{File: file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	restart := opts.Restart
	switch restart {
	case "":
		restart = RestartNever
	case RestartAlways, RestartOnFailure, RestartNever:
	default:
		bad(0, "restart", "must be one of always, on-failure, never (got %q)", restart)
	}
	base, step, portErr := procfilePorts(opts)
	if portErr != "" {
		bad(0, "", "%s", portErr)
	}
	cfg := &Config{
		File:     file,
		Dir:      absDir(file),
		Procfile: true,
		Supervisor: Supervisor{
			Workers:         DefaultWorkers,
			ShutdownTimeout: DefaultShutdownTimeout,
			LogFormat:       DefaultLogFormat,
			LogLevel:        DefaultLogLevel,
			WatchConfig:     true,
		},
	}
	for i, text := range strings.Split(string(data), "\n") {
		line := i + 1
		name, cmd, msg := procfileLine(text)
		if msg == "" && cfg.Program(name) != nil {
			first := cfg.Program(name).Line
			msg = fmt.Sprintf("process type %s is given twice: here and on %s:%d (names must be unique; rename one, e.g. %s2)", name, file, first, name)
		}
		switch {
		case msg != "":
			bad(line, name, "%s", msg)
		case name != "": // not a blank or comment line
			port := base + len(cfg.Programs)*step
			cfg.Programs = append(cfg.Programs, procfileProgram(name, line, cmd, cfg.Dir, restart, port, opts.Env))
		}
	}
	if len(cfg.Programs) == 0 && len(errs.list) == 0 {
		bad(0, "", `no processes: add lines like "web: ./server"`)
	}
	applyFormation(cfg, opts, bad)
	if opts.HoldPorts {
		holdPorts(cfg)
	}
	if w := devWatch(opts, cfg.Dir, bad); w != nil {
		for _, p := range cfg.Programs {
			pw := *w
			p.Watch = &pw
		}
	}
	for _, p := range cfg.Programs {
		if last := p.Port + max(p.Instances, 1) - 1; portErr == "" && last > maxPort {
			bad(p.Line, p.Name, "PORT %d is past %d (the first process type's PORT is %d, +%d per type, +1 per instance): choose a lower port with -p", last, maxPort, base, step)
		}
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// maxPort is the highest TCP port.
const maxPort = 65535

// procfilePorts is the PORT of the first process type and the step to the
// next: foreman's 5000 and 100 unless told, or the PORT of the env files,
// else of the shell, as the base. msg says what is wrong with the base.
func procfilePorts(opts ProcfileOptions) (base, step int, msg string) {
	step = opts.PortStep
	if step <= 0 {
		step = 100
	}
	if opts.BasePort != 0 {
		if opts.BasePort < 1 || opts.BasePort > maxPort {
			return 5000, step, fmt.Sprintf("port: must be from 1 to %d (got %d)", maxPort, opts.BasePort)
		}
		return opts.BasePort, step, ""
	}
	for _, from := range []struct{ what, v string }{{"PORT of the env files", opts.Env["PORT"]}, {"$PORT", opts.ShellPort}} {
		if from.v == "" {
			continue
		}
		p, err := strconv.Atoi(strings.TrimSpace(from.v))
		if err != nil || p < 1 || p > maxPort {
			return 5000, step, fmt.Sprintf("%s: must be from 1 to %d (got %q)", from.what, maxPort, from.v)
		}
		return p, step, ""
	}
	return 5000, step, ""
}

// procfileLine reads one line: a process type's name and command, nothing
// for a blank or comment line, or what is wrong with it (msg).
func procfileLine(text string) (name, cmd, msg string) {
	text = strings.TrimSpace(strings.TrimSuffix(text, "\r"))
	if text == "" || strings.HasPrefix(text, "#") {
		return "", "", ""
	}
	name, cmd, ok := strings.Cut(text, ":")
	name, cmd = strings.TrimSpace(name), strings.TrimSpace(cmd)
	switch {
	case !ok:
		return "", "", `want "name: command" (no ":" on this line)`
	case !procNameRE().MatchString(name) || validName(name) != nil:
		// The same rule as a TOML program's name, less the '.'.
		return name, "", "invalid process type name: up to 63 letters, digits, '_' or '-', starting with a letter or digit"
	case cmd == "":
		return name, "", "empty command"
	case strings.ContainsRune(cmd, 0):
		return name, "", "command contains a NUL byte"
	}
	return name, cmd, ""
}

// procfileProgram is one process type with the dev runner's defaults.
func procfileProgram(name string, line int, cmd, dir string, restart RestartPolicy, port int, baseEnv map[string]string) *Program {
	env := maps.Clone(baseEnv)
	if env == nil {
		env = map[string]string{}
	}
	env["PORT"] = strconv.Itoa(port)
	p := newProgram(name, line, dir)
	p.Command = []string{"/bin/sh", "-c", cmd}
	p.Env, p.Restart, p.Port = env, restart, port
	return p
}

// applyFormation sets each process type's instances from -m (0 leaves it
// stopped) and, unless told to keep running, makes each one that starts
// end the whole set when it ends.
func applyFormation(cfg *Config, opts ProcfileOptions, bad func(line int, key, format string, args ...any)) {
	for _, name := range slices.Sorted(maps.Keys(opts.Formation)) {
		n := opts.Formation[name]
		if n < 0 || n > 10000 {
			bad(0, "formation."+name, "must be between 0 and 10000 (got %d)", n)
			continue
		}
		if name != "all" && cfg.Program(name) == nil {
			bad(0, "formation."+name, "no such process type in the Procfile")
		}
	}
	for _, list := range []struct {
		key   string
		names []string
	}{{"can_die", opts.CanDie}, {"auto_restart", opts.AutoRestart}} {
		for _, name := range list.names {
			if cfg.Program(name) == nil {
				bad(0, list.key, "no process type %q in the Procfile", name)
			}
		}
	}
	for _, p := range cfg.Programs {
		n, ok := opts.Formation[p.Name]
		if !ok {
			n, ok = opts.Formation["all"]
		}
		switch {
		case !ok:
		case n == 0:
			p.Autostart = false
		default:
			p.Instances = n
		}
		if slices.Contains(opts.AutoRestart, p.Name) {
			p.Restart = RestartAlways
		}
		if !opts.KeepRunning && p.Autostart && !slices.Contains(opts.CanDie, p.Name) {
			cfg.Supervisor.ExitOn = append(cfg.Supervisor.ExitOn, p.Name)
		}
	}
}
