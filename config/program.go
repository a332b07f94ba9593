package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os/user"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/watch/glob"
)

// maxSocketPath is the room in sockaddr_un.sun_path, less the NUL.
const maxSocketPath = 107

// programKeys are the keys of [program.NAME] and [defaults].
var programKeys = []string{
	"command", "dir", "env", "env_file", "user", "group", "groups", "restart",
	"success_exit_codes", "restart_rules", "instances", "autostart", "critical", "sidecar", "depends_on", "stop_signal",
	"stop_timeout", "min_stop_grace", "backoff", "sandbox", "hooks", "stdout", "stderr", "watch",
	"probes", "notify", "notify_fd", "watchdog", "ready_log_line", // health.go
}

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
	t := d.table(n, "a table: [supervisor]")
	d.known(t, "socket", "socket_group", "workers", "shutdown_timeout", "log_format", "log_level", "exit_on", "watch_config", "probe_jitter", "log_ring", "strict_shutdown",
		"max_connections", "max_followers", "http")
	if v := t["socket"]; v != nil {
		if p, ok := d.path(v); ok {
			if len(p) > maxSocketPath {
				d.errorf(v.path, "%s is %d bytes long; a unix socket address holds at most %d", p, len(p), maxSocketPath)
			}
			s.Socket = p
		}
	}
	if v := t["socket_group"]; v != nil {
		if g, ok := d.str(v); ok {
			// As the server takes it: a gid as is, a name from the group
			// database, so that check refuses what run would.
			if n, err := strconv.Atoi(g); err != nil || n < 0 {
				if _, err := user.LookupGroup(g); err != nil {
					d.errorf(v.path, "no group %q on this machine", g)
				}
			}
			s.SocketGroup = g
		}
	}
	if v := t["workers"]; v != nil {
		if i, ok := d.integer(v, 1, 1024); ok {
			s.Workers = int(i)
		}
	}
	if v := t["shutdown_timeout"]; v != nil {
		if dur, ok := d.duration(v); ok {
			s.ShutdownTimeout = dur
		}
	}
	if v := t["log_format"]; v != nil {
		s.LogFormat, _ = d.enum(v, "text", "json")
	}
	if v := t["log_level"]; v != nil {
		s.LogLevel, _ = d.enum(v, "debug", "info", "warn", "error")
	}
	if v := t["exit_on"]; v != nil {
		names, _ := d.strs(v)
		for i, name := range names {
			path := v.path
			if _, isArr := v.v.([]any); isArr {
				path = elem(v.path, i)
			}
			d.exitOn = append(d.exitOn, path)
			s.ExitOn = append(s.ExitOn, name)
		}
	}
	if v := t["watch_config"]; v != nil {
		if b, ok := d.boolean(v); ok {
			s.WatchConfig = b
		}
	}
	if v := t["probe_jitter"]; v != nil {
		if b, ok := d.boolean(v); ok {
			s.ProbeJitter = b
		}
	}
	if v := t["strict_shutdown"]; v != nil {
		s.StrictShutdown, _ = d.boolean(v)
	}
	if v := t["log_ring"]; v != nil {
		if size, ok := d.size(v); ok {
			if size < 4<<10 || size > 64<<20 {
				d.errorf(v.path, "must be between 4KiB and 64MiB (got %d bytes)", size)
			} else {
				s.LogRing = int(size)
			}
		}
	}
	if v := t["max_connections"]; v != nil {
		if i, ok := d.integer(v, 4, 65536); ok {
			s.MaxConnections = int(i)
		}
	}
	if v := t["max_followers"]; v != nil {
		if i, ok := d.integer(v, 1, 65536); ok {
			s.MaxFollowers = int(i)
			if s.MaxFollowers >= s.MaxConnections {
				d.errorf(v.path, "must be below max_connections (%d), or followers leave no room for commands", s.MaxConnections)
			}
		}
	}
	if v := t["http"]; v != nil {
		if addr, ok := d.str(v); ok {
			if err := checkListenAddr(addr); err != nil {
				d.errorf(v.path, "%v", err)
			} else {
				s.HTTP = addr
			}
		}
	}
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
	p := &Program{
		Name:             name,
		Line:             d.ix.line(n.path),
		Dir:              d.dir,
		Restart:          RestartAlways,
		SuccessExitCodes: []int{0},
		Instances:        1,
		Autostart:        true,
		StopSignal:       DefaultStopSignal,
		StopTimeout:      DefaultStopTimeout,
		MinStopGrace:     DefaultMinStopGrace,
		Sandbox:          Sandbox{Umask: -1},
		Stdout:           defaultOutput(),
		Stderr:           defaultOutput(),
	}
	t := d.table(n, "a table")
	d.known(t, programKeys...)

	if v := t["command"]; v != nil {
		p.Command, _ = d.command(v)
	} else if !isDefaults {
		d.errorf(append(slices.Clip(n.path), "command"), "required: give the program a command (a string or an array)")
	}
	if v := t["dir"]; v != nil {
		p.Dir, _ = d.path(v)
	}
	env := map[string]string{}
	if v := t["env_file"]; v != nil {
		files, _ := d.strs(v)
		for i, f := range files {
			path := v.path
			if _, isArr := v.v.([]any); isArr {
				path = elem(v.path, i)
			}
			if f == "" {
				d.errorf(path, "must be a non-empty path")
				continue
			}
			abs := d.abs(f)
			p.EnvFiles = append(p.EnvFiles, abs)
			vars, err := LoadEnvFile(abs)
			if list, ok := err.(ErrorList); ok {
				for _, e := range list {
					d.errorf(path, "%v", e)
				}
				continue
			} else if err != nil {
				d.errorf(path, "%v", err)
				continue
			}
			maps.Copy(env, vars)
		}
	}
	if v := t["env"]; v != nil {
		d.env(v, env)
	}
	if len(env) > 0 {
		p.Env = env
	}
	if v := t["user"]; v != nil {
		p.User, _ = d.identity(v)
	}
	if v := t["group"]; v != nil {
		p.Group, _ = d.identity(v)
	}
	if v := t["groups"]; v != nil {
		if arr, ok := v.v.([]any); ok {
			for i, x := range arr {
				if g, ok := d.identity(&node{path: elem(v.path, i), v: x}); ok {
					p.Groups = append(p.Groups, g)
				}
			}
		} else {
			d.errorf(v.path, "must be an array of group names or ids (got %s)", describe(v.v))
		}
	}
	if v := t["restart"]; v != nil {
		if s, ok := d.enum(v, string(RestartAlways), string(RestartOnFailure), string(RestartNever)); ok {
			p.Restart = RestartPolicy(s)
		}
	}
	if v := t["success_exit_codes"]; v != nil {
		if arr, ok := v.v.([]any); ok {
			p.SuccessExitCodes = nil
			for i, x := range arr {
				if c, ok := d.integer(&node{path: elem(v.path, i), v: x}, 0, 255); ok {
					p.SuccessExitCodes = append(p.SuccessExitCodes, int(c))
				}
			}
		} else {
			d.errorf(v.path, "must be an array of exit codes like [0, 3] (got %s)", describe(v.v))
		}
	}
	if v := t["restart_rules"]; v != nil {
		p.RestartRules = d.restartRules(v)
	}
	if v := t["instances"]; v != nil {
		if i, ok := d.integer(v, 1, 10000); ok {
			p.Instances = int(i)
		}
	}
	if v := t["autostart"]; v != nil {
		p.Autostart, _ = d.boolean(v)
	}
	if v := t["sidecar"]; v != nil {
		p.Sidecar, _ = d.boolean(v)
	}
	if v := t["critical"]; v != nil {
		p.Critical, _ = d.boolean(v)
	}
	if v := t["depends_on"]; v != nil {
		d.dependsOn(p, v)
	}
	if v := t["stop_signal"]; v != nil {
		if sig, ok := d.signal(v); ok {
			p.StopSignal = sig
		}
	}
	if v := t["stop_timeout"]; v != nil {
		if dur, ok := d.duration(v); ok {
			p.StopTimeout = dur
		}
	}
	if v := t["min_stop_grace"]; v != nil {
		if dur, ok := d.duration(v); ok {
			p.MinStopGrace = dur
		}
	}
	if v := t["backoff"]; v != nil {
		p.Backoff = d.backoff(v, isDefaults)
	} else {
		p.Backoff = Backoff{Initial: DefaultBackoffInitial, Max: DefaultBackoffMax, ResetAfter: DefaultBackoffResetAfter}
	}
	if v := t["sandbox"]; v != nil {
		p.Sandbox = d.sandbox(v, isDefaults)
	}
	if v := t["hooks"]; v != nil {
		p.Hooks = d.hooks(v, isDefaults)
	}
	if v := t["stdout"]; v != nil {
		p.Stdout = d.output(v)
	}
	if v := t["stderr"]; v != nil {
		p.Stderr = d.output(v)
	}
	if v := t["watch"]; v != nil {
		p.Watch = d.watch(v, p.Dir)
	}
	d.health(p, n, t, isDefaults)
	return p
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
	_, isArr := n.v.([]any)
	for i, name := range names {
		path := n.path
		if isArr {
			path = elem(n.path, i)
		}
		if slices.Contains(p.DependsOn, name) {
			d.errorf(path, "%q is listed twice", name)
			continue
		}
		p.DependsOn = append(p.DependsOn, name)
		d.deps[p] = append(d.deps[p], path)
	}
}

func (d *decoder) backoff(n *node, isDefaults bool) Backoff {
	b := Backoff{Initial: DefaultBackoffInitial, Max: DefaultBackoffMax}
	t := d.table(n, `a table like { initial = "10s", max = "5m" }`)
	d.known(t, "initial", "max", "reset_after")
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

func (d *decoder) sandbox(n *node, isDefaults bool) Sandbox {
	sb := Sandbox{Umask: -1}
	t := d.table(n, "a table: [program.NAME.sandbox]")
	d.known(t, "namespaces", "hostname", "memory_max", "cpu_max", "pids_max", "no_new_privileges", "umask", "rlimits")
	if v := t["namespaces"]; v != nil {
		if arr, ok := v.v.([]any); ok {
			for i, x := range arr {
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
		} else {
			d.errorf(v.path, "must be an array like [\"pid\", \"mount\"] (got %s)", describe(v.v))
		}
	}
	if v := t["hostname"]; v != nil {
		if s, ok := d.str(v); ok {
			if !hostnameRE().MatchString(s) {
				d.errorf(v.path, "%q is not a valid hostname (1-64 letters, digits, '-' or '.')", s)
			} else if !isDefaults && !slices.Contains(sb.Namespaces, "uts") {
				d.errorf(v.path, `needs the "uts" namespace: add "uts" to namespaces`)
			}
			sb.Hostname = s
		}
	}
	if v := t["memory_max"]; v != nil {
		sb.MemoryMax, _ = d.size(v)
	}
	if v := t["cpu_max"]; v != nil {
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
	if v := t["pids_max"]; v != nil {
		if i, ok := d.integer(v, 0, 1<<31); ok {
			if i > 0 && i < 8 {
				// The sandbox's init and its runtime threads count against
				// pids.max until the program is exec'd (notes/sandbox.md §1b).
				d.errorf(v.path, "must be 0 (no limit) or at least 8 (got %d): the sandbox init needs a few", i)
			}
			sb.PidsMax = i
		}
	}
	if v := t["no_new_privileges"]; v != nil {
		sb.NoNewPrivileges, _ = d.boolean(v)
	}
	if v := t["umask"]; v != nil {
		switch x := v.v.(type) {
		case string:
			m, err := parseUmask(x)
			if err != nil {
				d.errorf(v.path, "%v", err)
			} else {
				sb.Umask = m
			}
		case int64:
			if x < 0 || x > 0o777 {
				d.errorf(v.path, "must be between 0o000 and 0o777 (got %#o); write it as \"0022\" or 0o022", x)
			} else {
				sb.Umask = int(x)
			}
		default:
			d.errorf(v.path, "must be an octal string like \"0022\" (got %s)", describe(v.v))
		}
	}
	if v := t["rlimits"]; v != nil {
		sb.Rlimits = d.rlimits(v, isDefaults)
	}
	return sb
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
			d.known(sub, "soft", "hard")
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
	d.known(t, "command", "http", "timeout")
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
		d.known(t, "url", "method", "headers", "expect_status")
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
	d.known(t, "paths", "include", "exclude", "debounce", "signal")
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
	d.known(t, "console", "file", "max_size", "max_files")
	if v := t["console"]; v != nil {
		o.Console, _ = d.boolean(v)
	}
	if v := t["file"]; v != nil {
		o.File, _ = d.path(v)
	}
	if v := t["max_size"]; v != nil {
		if s, ok := d.size(v); ok {
			if s < 4096 {
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
	return o
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
		d.known(t, "action", "exit_codes")
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
		d.known(et, "operator", "values")
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
