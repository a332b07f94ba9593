package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/supervise-dev/supervise/internal/consolepath"
	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/watch/glob"
)

// maxSocketPath is the room in sockaddr_un.sun_path, less the NUL.
const maxSocketPath = 107

func (d *decoder) supervisor(n *node) Supervisor {
	s := Supervisor{
		Workers:         DefaultWorkers,
		ShutdownTimeout: DefaultShutdownTimeout,
		LogFormat:       DefaultLogFormat,
		LogLevel:        DefaultLogLevel,
		WatchConfig:     true,
		ProbeJitter:     true,
		LogRing:         DefaultLogRing,
		MaxConnections:  DefaultMaxConnections,
		MaxFollowers:    DefaultMaxFollowers,
	}
	if n == nil {
		return s
	}
	s.Line = d.ix.line(n.path)
	decodeKeys(d, d.table(n, "a table: [supervisor]"), &s, supervisorKeys)
	return s
}

// checkListenAddr accepts HOST:PORT (HOST may be empty for every address,
// an IPv6 address in brackets) with a port number, as the metrics listener
// takes it.
func checkListenAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not HOST:PORT (e.g. \"127.0.0.1:9100\", \":9100\" for every address): %v", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: the port must be a number from 0 to 65535", addr)
	}
	if host != "" && net.ParseIP(host) == nil && !validHostname(host) {
		return fmt.Errorf("%q: %q is neither an IP address nor a host name", addr, host)
	}
	return nil
}

// validHostname: letters, digits, '-' and '.', as DNS names are.
func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// program decodes one program table (with [defaults] merged in), as far as
// it can: a bad value leaves the default in place and records an error.
// With isDefaults it decodes [defaults] alone: only the values are checked,
// not what a complete program needs.
func (d *decoder) program(name string, n *node, isDefaults bool) *Program {
	p := newProgram(name, d.ix.line(n.path), d.dir)
	pd := &programDecoding{Program: p, isDefaults: isDefaults, env: map[string]string{}}
	t := d.table(n, "a table")
	decodeKeys(d, t, pd, programKeys)
	if t["command"] == nil && !isDefaults {
		d.errorf(append(slices.Clip(n.path), "command"), "required: give the program a command (a string or an array)")
	}
	if len(pd.env) > 0 {
		p.Env = pd.env
	}
	d.checkHealth(pd, n)
	d.checkSchedule(pd, t)
	return p
}

// newProgram is a program with every default in place, in both formats.
func newProgram(name string, line int, dir string) *Program {
	return &Program{
		Name:             name,
		Line:             line,
		Dir:              dir,
		Restart:          RestartAlways,
		SuccessExitCodes: []int{0},
		Instances:        1,
		Autostart:        true,
		StopSignal:       DefaultStopSignal,
		StopTimeout:      DefaultStopTimeout,
		MinStopGrace:     DefaultMinStopGrace,
		Backoff:          Backoff{Initial: DefaultBackoffInitial, Max: DefaultBackoffMax, ResetAfter: DefaultBackoffResetAfter},
		Sandbox:          Sandbox{Umask: -1},
		Stdout:           defaultOutput(),
		Stderr:           defaultOutput(),
	}
}

func defaultOutput() Output {
	return Output{Console: true, MaxSize: DefaultLogMaxSize, MaxFiles: DefaultLogMaxFiles}
}

// env reads the env table into env, expanding ${VAR} in values. Numbers
// and booleans are taken as their TOML spelling (PORT = 8080).
func (d *decoder) env(n *node, env map[string]string) {
	t := d.table(n, `a table of variables, like { PORT = "8080" }`)
	for _, k := range slices.Sorted(maps.Keys(t)) {
		v := t[k]
		if k == "" || strings.ContainsAny(k, "=\x00") {
			d.errorf(v.path, "invalid variable name: must be non-empty, without '=' or NUL")
			continue
		}
		var s string
		switch x := v.v.(type) {
		case string:
			s = x
		case int64:
			s = strconv.FormatInt(x, 10)
		case float64:
			s = strconv.FormatFloat(x, 'g', -1, 64)
		case bool:
			s = strconv.FormatBool(x)
		default:
			d.errorf(v.path, "must be a string (got %s)", describe(v.v))
			continue
		}
		if strings.ContainsRune(s, 0) {
			d.errorf(v.path, "must not contain NUL bytes")
			continue
		}
		exp, err := expandEnv(s, d.lookup)
		if err != nil {
			d.errorf(v.path, "%v", err)
			continue
		}
		env[k] = exp
	}
}

var identityRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*\$?$`) })

// identity reads a user or group: a name, or a numeric id (as an integer or
// a string). Names are resolved when the program starts, not here, so a
// file can be checked on another machine.
func (d *decoder) identity(n *node) (string, bool) {
	switch x := n.v.(type) {
	case int64:
		if x < 0 || x > 1<<32-2 {
			d.errorf(n.path, "must be a valid id (got %d)", x)
			return "", false
		}
		return strconv.FormatInt(x, 10), true
	case string:
		if len(x) > 256 || !identityRE().MatchString(x) {
			d.errorf(n.path, "%q is not a valid user or group name", x)
			return "", false
		}
		return x, true
	}
	d.errorf(n.path, "must be a name or a numeric id (got %s)", describe(n.v))
	return "", false
}

func (d *decoder) signal(n *node) (syscall.Signal, bool) {
	var s string
	switch x := n.v.(type) {
	case string:
		s = x
	case int64:
		s = strconv.FormatInt(x, 10)
	default:
		d.errorf(n.path, "must be a signal name like \"TERM\" (got %s)", describe(n.v))
		return 0, false
	}
	sig, err := unixsig.Parse(s)
	if err != nil {
		d.errorf(n.path, "%v", err)
		return 0, false
	}
	return sig, true
}

func (d *decoder) dependsOn(p *Program, n *node) {
	switch x := n.v.(type) {
	case map[string]*node:
		d.dependsOnTable(p, x)
		return
	case string, []any:
	default:
		d.errorf(n.path, `must be an array of names like ["db"], or a table like { db = "ready", migrate = "completed" } (got %s)`, describe(n.v))
		return
	}
	names, ok := d.strs(n)
	if !ok {
		return
	}
	for i, name := range names {
		path := elemOf(n, i)
		if slices.Contains(p.DependsOn, name) {
			d.errorf(path, "%q is listed twice", name)
			continue
		}
		p.DependsOn = append(p.DependsOn, name)
		d.deps[p] = append(d.deps[p], path)
	}
}

var (
	backoffKeys          = []string{"initial", "max", "reset_after"}
	rlimitKeys           = []string{"soft", "hard"}
	hookKeys             = []string{"command", "http", "timeout"}
	httpHookKeys         = []string{"url", "method", "headers", "expect_status"}
	watchKeys            = []string{"paths", "include", "exclude", "debounce", "signal"}
	outputKeys           = []string{"console", "file", "max_size", "max_files", "timestamps"}
	restartRuleKeys      = []string{"action", "exit_codes"}
	restartRuleMatchKeys = []string{"operator", "values"}
)

func (d *decoder) backoff(n *node, isDefaults bool) Backoff {
	b := Backoff{Initial: DefaultBackoffInitial, Max: DefaultBackoffMax}
	t := d.table(n, `a table like { initial = "10s", max = "5m" }`)
	d.known(t, backoffKeys...)
	var setMax, setInitial bool
	if v := t["initial"]; v != nil {
		b.Initial, _ = d.duration(v)
		setInitial = true
	}
	if v := t["max"]; v != nil {
		b.Max, _ = d.duration(v)
		setMax = true
	}
	if v := t["reset_after"]; v != nil {
		if dur, ok := d.duration(v); ok {
			if dur == 0 {
				d.errorf(v.path, "must be more than 0 (a run this long forgives past crashes)")
			}
			b.ResetAfter = dur
		}
	}
	if !setMax && b.Initial > b.Max {
		b.Max = b.Initial // initial alone above the 5m default: never shrink it
	}
	if setMax && !setInitial && b.Max < b.Initial {
		b.Initial = b.Max // max alone below 10s lowers the first delay, as the kubelet's node-wide maximum does
	}
	if b.Max < b.Initial && !isDefaults {
		d.errorf(append(slices.Clip(n.path), "max"), "must not be less than initial (%v < %v)", b.Max, b.Initial)
	}
	if b.ResetAfter == 0 {
		b.ResetAfter = DefaultBackoffResetAfter
	}
	return b
}

var hostnameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,62})$`) })

// sandboxDecoding is one sandbox table being decoded.
type sandboxDecoding struct {
	*Sandbox
	isDefaults bool
}

func (d *decoder) sandbox(n *node, isDefaults bool) Sandbox {
	sb := Sandbox{Umask: -1}
	decodeKeys(d, d.table(n, "a table: [program.NAME.sandbox]"), &sandboxDecoding{&sb, isDefaults}, sandboxKeys)
	return sb
}

// sandboxKeys are the keys of [program.NAME.sandbox]; namespaces comes
// before hostname, which needs "uts".
var sandboxKeys = []key[*sandboxDecoding]{
	{"namespaces", func(d *decoder, sb *sandboxDecoding, v *node) {
		for i, x := range d.array(v, `an array like ["pid", "mount"]`) {
			path := elem(v.path, i)
			s, ok := x.(string)
			switch {
			case !ok:
				d.errorf(path, "must be a string (got %s)", describe(x))
			case !slices.Contains(namespaces, s):
				d.errorf(path, "must be one of %s (got %q)", strings.Join(namespaces, ", "), s)
			case slices.Contains(sb.Namespaces, s):
				d.errorf(path, "%q is listed twice", s)
			default:
				sb.Namespaces = append(sb.Namespaces, s)
			}
		}
	}},
	{"hostname", func(d *decoder, sb *sandboxDecoding, v *node) {
		s, ok := d.str(v)
		if !ok {
			return
		}
		if !hostnameRE().MatchString(s) {
			d.errorf(v.path, "%q is not a valid hostname (1-64 letters, digits, '-' or '.')", s)
		} else if !sb.isDefaults && !slices.Contains(sb.Namespaces, "uts") {
			d.errorf(v.path, `needs the "uts" namespace: add "uts" to namespaces`)
		}
		sb.Hostname = s
	}},
	{"memory_max", func(d *decoder, sb *sandboxDecoding, v *node) { sb.MemoryMax, _ = d.size(v) }},
	{"cpu_max", (*decoder).cpuMax},
	{"pids_max", func(d *decoder, sb *sandboxDecoding, v *node) {
		if i, ok := d.integer(v, 0, 1<<31); ok {
			if i > 0 && i < 8 {
				// The sandbox's init and its runtime threads count against
				// pids.max until the program is exec'd.
				d.errorf(v.path, "must be 0 (no limit) or at least 8 (got %d): the sandbox init needs a few", i)
			}
			sb.PidsMax = i
		}
	}},
	{"no_new_privileges", func(d *decoder, sb *sandboxDecoding, v *node) { setBool(d, v, &sb.NoNewPrivileges) }},
	{"umask", (*decoder).umask},
	{"rlimits", func(d *decoder, sb *sandboxDecoding, v *node) { sb.Rlimits = d.rlimits(v, sb.isDefaults) }},
}

func (d *decoder) cpuMax(sb *sandboxDecoding, v *node) {
	switch x := v.v.(type) {
	case float64:
		sb.CPUMax = x
	case int64:
		sb.CPUMax = float64(x)
	default:
		d.errorf(v.path, "must be a number of cores like 0.5 (got %s)", describe(v.v))
	}
	if sb.CPUMax < 0 || sb.CPUMax != sb.CPUMax || sb.CPUMax > 1<<20 {
		d.errorf(v.path, "must be a number of cores above 0 (got %v)", sb.CPUMax)
		sb.CPUMax = 0
	}
}

func (d *decoder) umask(sb *sandboxDecoding, v *node) {
	switch x := v.v.(type) {
	case string:
		m, err := parseUmask(x)
		if err != nil {
			d.errorf(v.path, "%v", err)
			return
		}
		sb.Umask = m
	case int64:
		if x < 0 || x > 0o777 {
			d.errorf(v.path, "must be between 0o000 and 0o777 (got %#o); write it as \"0022\" or 0o022", x)
			return
		}
		sb.Umask = int(x)
	default:
		d.errorf(v.path, "must be an octal string like \"0022\" (got %s)", describe(v.v))
	}
}

func (d *decoder) rlimits(n *node, isDefaults bool) map[string]Rlimit {
	t := d.table(n, "a table like { nofile = 1024, core = 0 }")
	names := slices.Sorted(maps.Keys(rlimitResources))
	d.known(t, names...)
	out := map[string]Rlimit{}
	for _, name := range names {
		v := t[name]
		if v == nil {
			continue
		}
		bytes := rlimitResources[name].bytes
		if sub, ok := v.v.(map[string]*node); ok {
			d.known(sub, rlimitKeys...)
			var rl Rlimit
			soft, hard := sub["soft"], sub["hard"]
			if (soft == nil || hard == nil) && !isDefaults {
				d.errorf(v.path, "needs both soft and hard (or one number for both)")
				continue
			}
			var okS, okH bool = true, true
			if soft != nil {
				rl.Soft, okS = d.rlimitValue(soft, bytes)
			}
			if hard != nil {
				rl.Hard, okH = d.rlimitValue(hard, bytes)
			}
			if okS && okH && soft != nil && hard != nil && rl.Soft > rl.Hard {
				d.errorf(soft.path, "must not be above hard (%s > %s)", rlimitString(rl.Soft), rlimitString(rl.Hard))
			}
			out[name] = rl
			continue
		}
		if x, ok := d.rlimitValue(v, bytes); ok {
			out[name] = Rlimit{Soft: x, Hard: x}
		}
	}
	return out
}

func rlimitString(v uint64) string {
	if v == Unlimited {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}

// rlimitValue reads a count, "unlimited", or for byte limits a size.
func (d *decoder) rlimitValue(n *node, bytes bool) (uint64, bool) {
	switch x := n.v.(type) {
	case int64:
		if x < 0 {
			d.errorf(n.path, "must not be negative (got %d)", x)
			return 0, false
		}
		return uint64(x), true
	case string:
		if strings.EqualFold(x, "unlimited") || strings.EqualFold(x, "infinity") {
			return Unlimited, true
		}
		if bytes {
			v, err := ParseSize(x)
			if err != nil {
				d.errorf(n.path, "%v", err)
				return 0, false
			}
			return uint64(v), true
		}
		if v, err := strconv.ParseUint(x, 10, 64); err == nil {
			return v, true
		}
	}
	what := "a number or \"unlimited\""
	if bytes {
		what = "a number, a size like \"64MiB\", or \"unlimited\""
	}
	d.errorf(n.path, "must be %s (got %s)", what, describe(n.v))
	return 0, false
}

var hookNames = []string{"pre_start", "post_start", "pre_stop", "post_stop"}

func (d *decoder) hooks(n *node, isDefaults bool) Hooks {
	var h Hooks
	t := d.table(n, "a table: [program.NAME.hooks.pre_start] …")
	d.known(t, hookNames...)
	dst := []**Hook{&h.PreStart, &h.PostStart, &h.PreStop, &h.PostStop}
	for i, name := range hookNames {
		if v := t[name]; v != nil {
			*dst[i] = d.hook(v, isDefaults)
		}
	}
	return h
}

func (d *decoder) hook(n *node, isDefaults bool) *Hook {
	t := d.table(n, `a table like { command = "./migrate.sh", timeout = "30s" }`)
	if t == nil {
		return nil
	}
	d.known(t, hookKeys...)
	h := &Hook{Timeout: DefaultHookTimeout}
	cmd, http := t["command"], t["http"]
	switch {
	case cmd != nil && http != nil:
		d.errorf(http.path, "a hook is a command or an http request, not both")
	case cmd == nil && http == nil && !isDefaults:
		d.errorf(n.path, "needs a command or an http request")
	}
	if cmd != nil {
		h.Command, _ = d.command(cmd)
	}
	if http != nil {
		h.HTTP = d.httpHook(http)
	}
	if v := t["timeout"]; v != nil {
		if dur, ok := d.duration(v); ok {
			if dur == 0 {
				d.errorf(v.path, "must be more than 0")
			}
			h.Timeout = dur
		}
	}
	return h
}

// httpHook reads a URL string, or a table with url, method, headers and
// expect_status.
func (d *decoder) httpHook(n *node) *HTTPHook {
	h := &HTTPHook{Method: "GET"}
	urlNode := n
	if t, ok := n.v.(map[string]*node); ok {
		d.known(t, httpHookKeys...)
		urlNode = t["url"]
		if urlNode == nil {
			d.errorf(n.path, "needs a url")
		}
		if v := t["method"]; v != nil {
			if s, ok := d.str(v); ok {
				m := strings.ToUpper(s)
				if !slices.Contains([]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}, m) {
					d.errorf(v.path, "must be an HTTP method like GET or POST (got %q)", s)
				}
				h.Method = m
			}
		}
		if v := t["headers"]; v != nil {
			h.Headers = d.headers(v, `a table like { Authorization = "Bearer …" }`)
		}
		if v := t["expect_status"]; v != nil {
			if i, ok := d.integer(v, 100, 599); ok {
				h.ExpectStatus = int(i)
			}
		}
	} else if _, ok := n.v.(string); !ok {
		d.errorf(n.path, "must be a URL or a table with url, method, headers, expect_status (got %s)", describe(n.v))
		return h
	}
	if urlNode != nil {
		h.URL = d.httpURL(urlNode)
	}
	return h
}

// headers decodes a table of HTTP headers (of a hook or a probe); example
// shows the expected form in the error.
func (d *decoder) headers(v *node, example string) map[string]string {
	ht := d.table(v, example)
	if ht == nil {
		return nil
	}
	h := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(ht)) {
		hv := ht[k]
		if s, ok := d.str(hv); ok {
			if k == "" || strings.ContainsAny(k, " :\r\n") || strings.ContainsAny(s, "\r\n") {
				d.errorf(hv.path, "invalid header")
				continue
			}
			h[k] = s
		}
	}
	return h
}

// httpURL decodes an absolute http:// or https:// URL.
func (d *decoder) httpURL(n *node) string {
	s, ok := d.str(n)
	if !ok {
		return ""
	}
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.errorf(n.path, "%q is not an http:// or https:// URL", s)
	}
	return s
}

// watch reads [program.NAME.watch]; paths default to dir, the program's.
func (d *decoder) watch(n *node, dir string) *Watch {
	t := d.table(n, `a table like { paths = ["src"], include = ["**/*.go"] }`)
	if t == nil {
		return nil
	}
	d.known(t, watchKeys...)
	w := &Watch{Debounce: DefaultWatchDebounce}
	if v := t["paths"]; v != nil {
		paths, _ := d.strs(v)
		arr, isArr := v.v.([]any)
		for i, p := range paths {
			path := v.path
			if isArr {
				if _, isStr := arr[i].(string); !isStr {
					continue // reported by strs
				}
				path = elem(v.path, i)
			}
			if p == "" || strings.ContainsRune(p, 0) {
				d.errorf(path, "must be a non-empty path")
				continue
			}
			w.Paths = append(w.Paths, d.abs(p))
		}
		if isArr && len(paths) == 0 {
			d.errorf(v.path, "must name at least one path (leave paths out to watch the program's dir)")
		}
	} else {
		w.Paths = []string{dir}
	}
	if v := t["include"]; v != nil {
		w.Include = d.globs(v)
	}
	if v := t["exclude"]; v != nil {
		w.Exclude = d.globs(v)
	}
	if v := t["debounce"]; v != nil {
		if dur, ok := d.duration(v); ok {
			w.Debounce = dur
		}
	}
	if v := t["signal"]; v != nil {
		if sig, ok := d.signal(v); ok {
			w.Signal = sig
		}
	}
	return w
}

// globs reads a glob or an array of them, each checked by the matcher the
// watcher will use.
func (d *decoder) globs(n *node) []string {
	pats, _ := d.strs(n)
	arr, isArr := n.v.([]any)
	var out []string
	for i, p := range pats {
		path := n.path
		if isArr {
			if _, isStr := arr[i].(string); !isStr {
				continue // reported by strs
			}
			path = elem(n.path, i)
		}
		if _, err := glob.Compile(p); err != nil {
			d.errorf(path, "%q: %v", p, err)
			continue
		}
		out = append(out, p)
	}
	return out
}

func (d *decoder) output(n *node) Output {
	o := defaultOutput()
	t := d.table(n, `a table like { console = true, file = "web.log" }`)
	d.known(t, outputKeys...)
	if v := t["console"]; v != nil {
		o.Console, _ = d.boolean(v)
	}
	if v := t["file"]; v != nil {
		o.File, _ = d.path(v)
		d.consoleFile(t, v, &o)
	}
	if v := t["max_size"]; v != nil {
		if s, ok := d.size(v); ok {
			if s < 4096 && s != 0 { // 0: never rotated
				d.errorf(v.path, "must be at least 4KiB (got %d bytes)", s)
			}
			o.MaxSize = s
		}
	}
	if v := t["max_files"]; v != nil {
		if i, ok := d.integer(v, 1, 1000); ok {
			o.MaxFiles = int(i)
		}
	}
	if v := t["timestamps"]; v != nil {
		setBool(d, v, &o.Timestamps)
	}
	return o
}

// IsConsolePath reports whether a log file path means supervise's own
// stdout or stderr.
func IsConsolePath(p string) bool { return consolepath.FD(p) != 0 }

// consoleFile turns a file naming supervise's own stdout or stderr into
// the console, without rotation: opening that name as a file would write
// over it (and /dev/stdout is every process's).
func (d *decoder) consoleFile(t map[string]*node, v *node, o *Output) {
	if !IsConsolePath(o.File) {
		return
	}
	if c := t["console"]; c != nil {
		if on, ok := c.v.(bool); ok && !on {
			d.errorf(v.path, "%s is supervise's own output, which console = false turns off: remove one of them", o.File)
		}
	}
	o.File, o.Console = "", true
}

// crossCheck finds what no single program shows: unknown names in
// depends_on and exit_on, dependency cycles, two programs writing one file.
func (d *decoder) crossCheck(cfg *Config) {
	byName := map[string]*Program{}
	for _, p := range cfg.Programs {
		byName[p.Name] = p
	}
	// A program refused for a bad name is not in byName; don't report
	// references to it as unknown too.
	exists := func(name string) bool {
		return byName[name] != nil || d.refused[name]
	}
	for _, p := range cfg.Programs {
		for i, dep := range p.DependsOn {
			if !exists(dep) {
				d.errorf(d.deps[p][i], "unknown program %q%s", dep, didYouMean(dep, byName))
			}
		}
	}
	for i, name := range cfg.Supervisor.ExitOn {
		if !exists(name) {
			d.errorf(d.exitOn[i], "unknown program %q%s", name, didYouMean(name, byName))
		}
	}
	d.checkCompleted(cfg)
	d.checkScheduled(cfg)
	for _, cycle := range findCycles(cfg.Programs) {
		first := byName[cycle[0]]
		path := []string{"program", first.Name, "depends_on"}
		if i := slices.Index(first.DependsOn, cycle[1]); i >= 0 {
			path = d.deps[first][i]
		}
		d.errorf(path, "dependency cycle: %s", strings.Join(cycle, " -> "))
	}
	files := map[string]string{}
	for _, p := range cfg.Programs {
		for _, s := range []struct {
			name string
			out  Output
		}{{"stdout", p.Stdout}, {"stderr", p.Stderr}} {
			if s.out.File == "" {
				continue
			}
			prev, ok := files[s.out.File]
			switch {
			case !ok:
				files[s.out.File] = "program." + p.Name + "." + s.name + ".file"
			case !strings.HasPrefix(prev, "program."+p.Name+"."): // stdout and stderr may share one
				d.errorf([]string{"program", p.Name, s.name, "file"}, "%s is already the log of %s: one file per program", s.out.File, prev)
			}
		}
	}
}

func didYouMean(name string, byName map[string]*Program) string {
	if s := suggest(name, slices.Sorted(maps.Keys(byName))); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// findCycles returns one cycle per strongly connected component of the
// dependency graph that has one, each starting at its first program in file
// order and ending where it started: [a b c a].
func findCycles(progs []*Program) [][]string {
	order := map[string]int{}
	for i, p := range progs {
		order[p.Name] = i
	}
	byName := map[string]*Program{}
	for _, p := range progs {
		byName[p.Name] = p
	}
	// Tarjan's algorithm over programs in file order.
	var (
		index   = map[string]int{}
		low     = map[string]int{}
		onStack = map[string]bool{}
		stack   []string
		cycles  [][]string
		next    int
	)
	var connect func(v string)
	connect = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range byName[v].DependsOn {
			if byName[w] == nil {
				continue
			}
			if _, seen := index[w]; !seen {
				connect(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var scc []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			scc = append(scc, w)
			if w == v {
				break
			}
		}
		if len(scc) == 1 && !slices.Contains(byName[v].DependsOn, v) {
			return
		}
		slices.SortFunc(scc, func(a, b string) int { return order[a] - order[b] })
		cycles = append(cycles, cycleIn(scc, byName))
	}
	for _, p := range progs {
		if _, seen := index[p.Name]; !seen {
			connect(p.Name)
		}
	}
	slices.SortFunc(cycles, func(a, b []string) int { return order[a[0]] - order[b[0]] })
	return cycles
}

// cycleIn finds a cycle through scc[0] inside the component, by a
// breadth-first search, so the cycle it names is a shortest one.
func cycleIn(scc []string, byName map[string]*Program) []string {
	in := map[string]bool{}
	for _, s := range scc {
		in[s] = true
	}
	start := scc[0]
	prev := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range byName[v].DependsOn {
			if !in[w] {
				continue
			}
			if w == start {
				cycle := []string{start}
				for x := v; x != start; x = prev[x] {
					cycle = append(cycle, x)
				}
				slices.Reverse(cycle[1:])
				return append(cycle, start)
			}
			if _, seen := prev[w]; !seen {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return append(slices.Clone(scc), start) // unreachable for a true component
}

// restartRules reads restart_rules: an array of tables like
// { action = "restart", exit_codes = { operator = "In", values = [42] } }.
func (d *decoder) restartRules(n *node) []RestartRule {
	items := anySlice(n.v)
	if items == nil {
		d.errorf(n.path, `must be an array of tables like [{ action = "restart", exit_codes = { operator = "In", values = [42] } }] (got %s)`, describe(n.v))
		return nil
	}
	if len(items) > 64 {
		d.errorf(n.path, "at most 64 rules (got %d)", len(items))
		return nil
	}
	var rules []RestartRule
	for i, x := range items {
		en := toNode(elem(n.path, i), x)
		t := d.table(en, `a table like { action = "restart", exit_codes = { operator = "In", values = [42] } }`)
		if t == nil {
			continue
		}
		d.known(t, restartRuleKeys...)
		r := RestartRule{Action: RuleRestart}
		if v := t["action"]; v != nil {
			r.Action, _ = d.enum(v, RuleRestart)
		}
		ec := t["exit_codes"]
		if ec == nil {
			d.errorf(en.path, "needs exit_codes = { operator = \"In\" or \"NotIn\", values = [...] }")
			continue
		}
		et := d.table(ec, `a table like { operator = "In", values = [42] }`)
		if et == nil {
			continue
		}
		d.known(et, restartRuleMatchKeys...)
		if v := et["operator"]; v != nil {
			r.Operator, _ = d.enum(v, RuleIn, RuleNotIn)
		} else {
			d.errorf(ec.path, "needs operator = \"In\" or \"NotIn\"")
		}
		vals := et["values"]
		var arr []any
		path := ec.path
		if vals != nil {
			arr, path = anySlice(vals.v), vals.path
		}
		if len(arr) == 0 || len(arr) > 255 {
			d.errorf(path, "needs values: an array of 1 to 255 exit codes like [42] (a signal N is 128+N)")
			continue
		}
		for j, x := range arr {
			if c, ok := d.integer(&node{path: elem(vals.path, j), v: x}, 0, 255); ok {
				r.Values = append(r.Values, int(c))
			}
		}
		rules = append(rules, r)
	}
	return rules
}

// anySlice returns v as a []any when it is an array (TOML decodes an array
// of tables as []map[string]any), else nil.
func anySlice(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case []map[string]any:
		out := make([]any, len(x))
		for i, m := range x {
			out[i] = m
		}
		return out
	}
	return nil
}
