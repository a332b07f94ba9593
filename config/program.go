package config

import (
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/supervise-dev/supervise/internal/unixsig"
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
	pd := &programDecoding{Program: p, isDefaults: isDefaults, env: envBudget{env: map[string]string{}}}
	t := d.table(n, "a table")
	decodeKeys(d, t, pd, programKeys)
	if t["command"] == nil && !isDefaults {
		d.errorf(append(slices.Clip(n.path), "command"), "required: give the program a command (a string or an array)")
	}
	if len(pd.env.env) > 0 {
		p.Env = pd.env.env
	}
	d.checkListen(pd, n)
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

// env reads the env table into p's environment, expanding ${VAR} in
// values. Numbers and booleans are taken as their TOML spelling (PORT =
// 8080).
func (d *decoder) env(n *node, p *programDecoding) {
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
		if err := d.setEnv(p, k, exp); err != nil {
			d.errorf(v.path, "%v", err)
			return // every further variable would cross it too
		}
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
