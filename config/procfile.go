package config

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ProcfileOptions are the dev-runner settings of a Procfile run; the zero
// value gives foreman's defaults.
type ProcfileOptions struct {
	// BasePort is the PORT of the first process type; 0 means the PORT of
	// Env if it has one, else 5000.
	BasePort int
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
	// directory changes (.git and editor files aside).
	Watch bool
}

func (o *ProcfileOptions) isZero() bool {
	return o.BasePort == 0 && o.PortStep == 0 && o.Env == nil && o.Formation == nil && o.Restart == "" && !o.KeepRunning &&
		o.EnvFiles == nil && !o.Watch
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
	base, step := procfilePorts(opts)
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
			msg = fmt.Sprintf("defined twice (first on line %d)", cfg.Program(name).Line)
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
	if err := errs.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// procfilePorts is the PORT of the first process type and the step to the
// next: foreman's 5000 and 100 unless told, or $PORT as the base.
func procfilePorts(opts ProcfileOptions) (base, step int) {
	step = opts.PortStep
	if step <= 0 {
		step = 100
	}
	base = opts.BasePort
	if base <= 0 {
		base = 5000
		if p, err := strconv.Atoi(opts.Env["PORT"]); err == nil && p > 0 {
			base = p
		}
	}
	return base, step
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
		if !opts.KeepRunning && p.Autostart {
			cfg.Supervisor.ExitOn = append(cfg.Supervisor.ExitOn, p.Name)
		}
	}
}
