package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
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
		o.EnvFiles == nil && !o.Watch && o.WatchPaths == nil && o.WatchIgnore == nil && o.CanDie == nil && o.AutoRestart == nil
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

// LoadEnvFile reads a .env file: KEY=VALUE lines, with
//
//   - blank lines and lines starting with # skipped, and an "export " prefix
//     allowed;
//   - unquoted values trimmed, and cut at " #" (a comment);
//   - 'single-quoted' values taken literally;
//   - "double-quoted" values with \n, \t, \r, \", \\ and \$ escapes;
//   - quoted values may span lines;
//   - in unquoted and double-quoted values, ${VAR}, ${VAR:-default} and
//     $VAR expand to the variable from an earlier line, else the
//     supervisor's environment, else "" (\$ and $$ are a literal $);
//     nothing expands in single quotes.
//
// Problems come back together as an ErrorList naming path:line and the
// variable.
func LoadEnvFile(path string) (map[string]string, error) {
	return LoadEnvFiles([]string{path})
}

// LoadEnvFiles reads several .env files in order into one set: a later
// file's variable replaces an earlier one's, and may refer to it.
func LoadEnvFiles(paths []string) (map[string]string, error) {
	all := map[string]string{}
	outer := func(name string) (string, bool) {
		if v, ok := all[name]; ok {
			return v, true
		}
		return os.LookupEnv(name)
	}
	for _, path := range paths {
		data, err := readFile(path)
		if err != nil {
			return nil, ErrorList{{File: path, Msg: "cannot read: " + errText(err)}}
		}
		env, err := parseEnv(path, string(data), outer)
		if err != nil {
			return nil, err
		}
		maps.Copy(all, env)
	}
	return all, nil
}

// errText is err's message without the path, which the Error names already.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// parseEnv parses one .env file; outer resolves the variables its values
// refer to that it does not set itself (nil: none).
func parseEnv(file, data string, outer func(string) (string, bool)) (map[string]string, error) {
	if err := checkSize(file, []byte(data)); err != nil {
		return nil, err
	}
	if err := checkLineBounds(file, []byte(data)); err != nil {
		return nil, err
	}
	errs := &errorSet{}
	env := map[string]string{}
	lookup := func(name string) (string, bool) {
		if v, ok := env[name]; ok {
			return v, true
		}
		if outer != nil {
			return outer(name)
		}
		return "", false
	}
	lines := strings.Split(strings.ReplaceAll(data, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		text := strings.TrimSpace(lines[i])
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(text, "export"); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "\t")) {
			text = strings.TrimSpace(rest)
		}
		key, val, ok := strings.Cut(text, "=")
		key = strings.TrimSpace(key)
		if !ok {
			errs.add(&Error{File: file, Line: lineNo, Msg: `want KEY=VALUE (no "=" on this line)`})
			continue
		}
		if !envNameRE().MatchString(key) {
			errs.add(&Error{File: file, Line: lineNo, Key: key, Msg: "invalid variable name: use letters, digits and '_', not starting with a digit"})
			continue
		}
		val = strings.TrimLeft(val, " \t")
		if val == "" || (val[0] != '"' && val[0] != '\'') {
			if j := strings.Index(val, " #"); j >= 0 {
				val = val[:j]
			}
			env[key] = interpolate(strings.TrimSpace(val), lookup)
			continue
		}
		v, last, msg := quotedValue(lines, i, val, lookup)
		if msg != "" {
			at := last + 1 // after the closing quote
			if v == nil {
				at = lineNo // unterminated: where it opened
			}
			errs.add(&Error{File: file, Line: at, Key: key, Msg: msg})
		}
		if v, ok := v.(string); ok {
			env[key] = v
		}
		i = last
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return env, nil
}

// quotedValue reads a quoted value that starts with val on lines[i] and may
// continue on the following lines: its text (nil when it is never closed),
// the index of its last line, and what is wrong with it, if anything.
// Double quotes take backslash escapes and $ references; single quotes
// take everything literally.
func quotedValue(lines []string, i int, val string, lookup func(string) (string, bool)) (v any, last int, msg string) {
	q := val[0]
	body := val[1:]
	var b strings.Builder
	for {
		j := 0
		for ; j < len(body) && body[j] != q; j++ {
			c := body[j]
			if q == '"' && c == '\\' && j+1 < len(body) {
				j++
				writeEscape(&b, body[j])
				continue
			}
			if q == '"' && c == '$' {
				if v, n := reference(body[j:], lookup); n > 0 {
					b.WriteString(v)
					j += n - 1
					continue
				}
			}
			b.WriteByte(c)
		}
		if j < len(body) { // the closing quote
			if tail := strings.TrimSpace(body[j+1:]); tail != "" && !strings.HasPrefix(tail, "#") {
				msg = "unexpected text after the closing quote"
			}
			return b.String(), i, msg
		}
		if i+1 >= len(lines) {
			return nil, i, "unterminated quoted value"
		}
		i++
		b.WriteByte('\n')
		body = lines[i]
	}
}

// writeEscape writes the character a backslash escape in a double-quoted
// value stands for; an unknown escape stays as written, as in a shell.
func writeEscape(b *strings.Builder, c byte) {
	switch c {
	case 'n':
		b.WriteByte('\n')
	case 't':
		b.WriteByte('\t')
	case 'r':
		b.WriteByte('\r')
	case '"', '\\', '$':
		b.WriteByte(c)
	default:
		b.WriteByte('\\')
		b.WriteByte(c)
	}
}

// interpolate expands the references of an unquoted value; \$ is a literal
// $, and any other backslash stays as written.
func interpolate(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '$':
			b.WriteByte('$')
			i++
		case s[i] == '$':
			if v, n := reference(s[i:], lookup); n > 0 {
				b.WriteString(v)
				i += n - 1
				continue
			}
			b.WriteByte('$')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// reference reads the variable reference that s starts with ("$NAME",
// "${NAME}", "${NAME:-default}", or "$$" for a $) and returns its value
// and length; n is
// 0 when s does not start with one (a lone "$", "$1", "${" unclosed),
// which then stays as written.
func reference(s string, lookup func(string) (string, bool)) (v string, n int) {
	if len(s) < 2 || s[0] != '$' {
		return "", 0
	}
	if s[1] == '$' {
		return "$", 2 // $$ is a literal $, as in the TOML env and docker compose
	}
	if s[1] == '{' {
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", 0
		}
		name, def, hasDef := strings.Cut(s[2:end], ":-")
		if !envNameRE().MatchString(name) {
			return "", 0
		}
		v, ok := lookup(name)
		if hasDef && (!ok || v == "") {
			v = def
		}
		return v, end + 1
	}
	n = 1
	for n < len(s) && (s[n] == '_' || s[n] >= 'A' && s[n] <= 'Z' || s[n] >= 'a' && s[n] <= 'z' || n > 1 && s[n] >= '0' && s[n] <= '9') {
		n++
	}
	if n == 1 {
		return "", 0
	}
	v, _ = lookup(s[1:n])
	return v, n
}
