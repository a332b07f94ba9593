package config

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Health checks: probes, readiness notification and the conditions of
// depends_on. The kubelet's probe defaults.
const (
	DefaultProbePeriod           = 10 * time.Second
	DefaultProbeTimeout          = 1 * time.Second
	DefaultProbeSuccessThreshold = 1
	DefaultProbeFailureThreshold = 3
	DefaultNotifyFD              = 3
)

// Notify values: how a program says it is ready, besides probes.
const (
	NotifyNone     = ""          // "none" in the file
	NotifySdNotify = "sd_notify" // NOTIFY_SOCKET, READY=1
	NotifyFD       = "fd"        // s6 style: a newline on fd NotifyFD
)

// depends_on conditions: what a dependent waits for.
const (
	// DependReady waits for the dependency to be ready: its readiness
	// check passed (probes.readiness, notify or ready_log_line, after
	// probes.startup), else simply running. The default.
	DependReady = "ready"
	// DependRunning waits for the dependency's process to run, ready or not.
	DependRunning = "running"
	// DependCompleted waits for a one-shot to exit successfully (a status
	// in its success_exit_codes) and not be restarted.
	DependCompleted = "completed"
)

// Probes are a program's kubelet probes; nil means none.
type Probes struct {
	// Startup gates the other two: they run once it passed. Failing
	// FailureThreshold times restarts the program, as liveness does
	// (reason StartupProbeFailed).
	Startup *Probe
	// Readiness decides Ready, which dependents wait for.
	Readiness *Probe
	// Liveness failing FailureThreshold times in a row restarts the
	// program (reason LivenessProbeFailed, counted as a crash).
	Liveness *Probe
}

// Probe is one probe: exactly one of Command, HTTP and TCP, and its timing,
// with the kubelet's defaults filled in.
type Probe struct {
	// Command runs in the program's sandbox, as its user, in its directory
	// and environment; exit status 0 passes.
	Command []string
	HTTP    *HTTPProbe
	// TCP is host:port; a completed connect passes. An empty host is
	// 127.0.0.1.
	TCP string

	InitialDelay     time.Duration // from the process start; default 0
	Period           time.Duration // default 10s
	Timeout          time.Duration // default 1s
	SuccessThreshold int           // default 1; always 1 for startup and liveness
	FailureThreshold int           // default 3
	// TerminationGracePeriod, when not 0, replaces the program's
	// stop_timeout for a stop this probe caused (startup and liveness
	// only), as the kubelet's probe-level terminationGracePeriodSeconds.
	TerminationGracePeriod time.Duration
}

// HTTPProbe is a GET; any 2xx or 3xx passes, or exactly ExpectStatus when
// it is not 0.
type HTTPProbe struct {
	URL          string // absolute http:// or https:// URL
	Headers      map[string]string
	ExpectStatus int
}

// DependsOnCondition returns what p waits for of its dependency dep:
// DependReady, DependRunning or DependCompleted.
func (p *Program) DependsOnCondition(dep string) string {
	if c, ok := p.DependsOnCond[dep]; ok {
		return c
	}
	return DependReady
}

// HasReadinessCheck reports whether p says when it is ready (a startup or
// readiness probe, notify, or ready_log_line); without one, a running p is
// ready.
func (p *Program) HasReadinessCheck() bool {
	return p.Probes.Startup != nil || p.Probes.Readiness != nil || p.Notify != NotifyNone || p.ReadyLogLine != ""
}

// checkHealth checks what the health keys of one program say together;
// their values were decoded by programKeys.
func (d *decoder) checkHealth(p *programDecoding, n *node) {
	if p.Notify == NotifyFD && p.NotifyFD == 0 {
		p.NotifyFD = DefaultNotifyFD
	}
	if p.isDefaults {
		return
	}
	// http and tcp probes connect from supervise, on the host's network: a
	// program in its own net namespace (with only its own loopback) is out
	// of their reach.
	if slices.Contains(p.Sandbox.Namespaces, "net") {
		for i, pr := range []*Probe{p.Probes.Startup, p.Probes.Readiness, p.Probes.Liveness} {
			if pr != nil && (pr.HTTP != nil || pr.TCP != "") {
				d.errorf(append(slices.Clip(n.path), "probes", probesKeys[i].name),
					`an http or tcp probe cannot reach a program in its own "net" namespace: use a command probe (run inside it), like ["curl", "-fsS", "http://127.0.0.1:8080/healthz"]`)
			}
		}
	}
	// Readiness has one source, so that "ready" means one thing.
	var sources []string
	var last *node
	if p.Probes.Readiness != nil {
		sources = append(sources, "probes.readiness")
	}
	if p.notify != nil {
		sources = append(sources, "notify")
		last = p.notify
	}
	if p.logLine != nil {
		sources = append(sources, "ready_log_line")
		last = p.logLine
	}
	if len(sources) > 1 {
		d.errorf(last.path, "readiness comes from one source; %s are set: keep one", strings.Join(sources, " and "))
	}
}

// probesDecoding is one probes table being decoded.
type probesDecoding struct {
	*Probes
	isDefaults bool
}

// probesKeys are the keys of [program.NAME.probes]: the probes by kind.
var probesKeys = []key[*probesDecoding]{
	{"startup", func(d *decoder, ps *probesDecoding, v *node) { ps.Startup = d.probe("startup", v, ps.isDefaults) }},
	{"readiness", func(d *decoder, ps *probesDecoding, v *node) { ps.Readiness = d.probe("readiness", v, ps.isDefaults) }},
	{"liveness", func(d *decoder, ps *probesDecoding, v *node) { ps.Liveness = d.probe("liveness", v, ps.isDefaults) }},
}

func (d *decoder) probes(n *node, isDefaults bool) Probes {
	var ps Probes
	decodeKeys(d, d.table(n, "a table: [program.NAME.probes.liveness] …"), &probesDecoding{&ps, isDefaults}, probesKeys)
	return ps
}

// probeDecoding is one probe being decoded; kind is startup, readiness or
// liveness.
type probeDecoding struct {
	*Probe
	kind string
}

// probeKeys are the keys of one probe, [program.NAME.probes.liveness].
var probeKeys = []key[*probeDecoding]{
	{"command", func(d *decoder, p *probeDecoding, v *node) { p.Command, _ = d.command(v) }},
	{"http", func(d *decoder, p *probeDecoding, v *node) { p.HTTP = d.httpProbe(v) }},
	{"tcp", func(d *decoder, p *probeDecoding, v *node) { p.TCP, _ = d.tcpAddr(v) }},
	{"initial_delay", func(d *decoder, p *probeDecoding, v *node) { p.InitialDelay, _ = d.duration(v) }},
	{"period", func(d *decoder, p *probeDecoding, v *node) { d.positiveDuration(v, &p.Period) }},
	{"timeout", func(d *decoder, p *probeDecoding, v *node) { d.positiveDuration(v, &p.Timeout) }},
	{"success_threshold", func(d *decoder, p *probeDecoding, v *node) {
		if i, ok := d.integer(v, 1, 1<<20); ok {
			if i != 1 && p.kind != "readiness" {
				d.errorf(v.path, "must be 1 for a %s probe (got %d): one success is enough", p.kind, i)
			}
			p.SuccessThreshold = int(i)
		}
	}},
	{"failure_threshold", func(d *decoder, p *probeDecoding, v *node) { setInt(d, v, 1, 1<<20, &p.FailureThreshold) }},
	{"termination_grace_period", func(d *decoder, p *probeDecoding, v *node) {
		dur, ok := d.duration(v)
		switch {
		case !ok:
		case p.kind == "readiness":
			d.errorf(v.path, "only a startup or liveness probe stops the program; a readiness probe has no grace period")
		case dur <= 0:
			d.errorf(v.path, "must be more than 0 (leave it out to use stop_timeout)")
		default:
			p.TerminationGracePeriod = dur
		}
	}},
}

// positiveDuration stores a duration above 0 in dst.
func (d *decoder) positiveDuration(v *node, dst *time.Duration) {
	if dur, ok := d.duration(v); ok {
		if dur <= 0 {
			d.errorf(v.path, "must be more than 0")
		} else {
			*dst = dur
		}
	}
}

func (d *decoder) probe(kind string, n *node, isDefaults bool) *Probe {
	t := d.table(n, `a table like { http = "http://127.0.0.1:8080/healthz", period = "5s" }`)
	if t == nil {
		return nil
	}
	p := &Probe{
		Period:           DefaultProbePeriod,
		Timeout:          DefaultProbeTimeout,
		SuccessThreshold: DefaultProbeSuccessThreshold,
		FailureThreshold: DefaultProbeFailureThreshold,
	}
	decodeKeys(d, t, &probeDecoding{p, kind}, probeKeys)
	var set []string
	for _, k := range []string{"command", "http", "tcp"} {
		if t[k] != nil {
			set = append(set, k)
		}
	}
	switch {
	case len(set) > 1:
		d.errorf(t[set[1]].path, "a probe is one of command, http and tcp; %s are set", strings.Join(set, " and "))
	case len(set) == 0 && !isDefaults:
		d.errorf(n.path, "needs a command, an http URL or a tcp address")
	}
	return p
}

// httpProbeKeys are the keys of a probe's http table.
var httpProbeKeys = []key[*HTTPProbe]{
	{"url", func(d *decoder, h *HTTPProbe, v *node) { h.URL = d.httpURL(v) }},
	{"headers", func(d *decoder, h *HTTPProbe, v *node) {
		h.Headers = d.headers(v, `a table like { Host = "web.internal" }`)
	}},
	{"expect_status", func(d *decoder, h *HTTPProbe, v *node) {
		if i, ok := d.integer(v, 100, 599); ok {
			h.ExpectStatus = int(i)
		}
	}},
}

// httpProbe reads a URL string, or a table with url, headers and
// expect_status. Probes are always GET.
func (d *decoder) httpProbe(n *node) *HTTPProbe {
	h := &HTTPProbe{}
	switch t := n.v.(type) {
	case map[string]*node:
		decodeKeys(d, t, h, httpProbeKeys)
		if t["url"] == nil {
			d.errorf(n.path, "needs a url")
		}
	case string:
		h.URL = d.httpURL(n)
	default:
		d.errorf(n.path, "must be a URL or a table with url, headers, expect_status (got %s)", describe(n.v))
	}
	return h
}

// tcpAddr reads "host:port", ":port" or a port number; the host defaults
// to 127.0.0.1.
func (d *decoder) tcpAddr(n *node) (string, bool) {
	var host, port string
	switch x := n.v.(type) {
	case int64:
		port = strconv.FormatInt(x, 10)
	case string:
		h, p, err := net.SplitHostPort(x)
		if err != nil {
			d.errorf(n.path, "%q is not host:port (like \"127.0.0.1:5432\" or \":5432\")", x)
			return "", false
		}
		host, port = h, p
	default:
		d.errorf(n.path, "must be \"host:port\" or a port number (got %s)", describe(n.v))
		return "", false
	}
	if i, err := strconv.Atoi(port); err != nil || i < 1 || i > 65535 {
		d.errorf(n.path, "port must be a number from 1 to 65535 (got %q)", port)
		return "", false
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), true
}

// dependencyDecoding is one dependency of depends_on's table form being
// decoded.
type dependencyDecoding struct {
	name        string
	cond        string
	restartWith bool
	bad         bool // the dependency is not kept
}

// dependsOnKeys are the keys of one dependency's table:
// { condition = "ready", restart_with = true }. condition comes first:
// restart_with reads it.
var dependsOnKeys = []key[*dependencyDecoding]{
	{"condition", func(d *decoder, dep *dependencyDecoding, v *node) {
		c, ok := d.enum(v, DependReady, DependRunning, DependCompleted)
		dep.cond, dep.bad = c, !ok
	}},
	{"restart_with", func(d *decoder, dep *dependencyDecoding, v *node) {
		if dep.bad {
			return
		}
		if b, ok := d.boolean(v); ok && b {
			if dep.cond == DependCompleted {
				d.errorf(v.path, "a dependency waited for to complete is not restarted with: drop restart_with or wait for %q to be ready or running", dep.name)
				dep.bad = true
				return
			}
			dep.restartWith = true
		}
	}},
}

// dependsOnTable reads the table form of depends_on:
// { db = "ready", migrate = "completed", cache = "running" }.
func (d *decoder) dependsOnTable(p *Program, t map[string]*node) {
	// The decoded table has no order: go by line (a [program.X.depends_on]
	// table has one key per line), then by name (an inline table).
	names := slices.Sorted(maps.Keys(t))
	slices.SortStableFunc(names, func(a, b string) int { return d.ix.line(t[a].path) - d.ix.line(t[b].path) })
	cond := map[string]string{}
	for _, name := range names {
		v := t[name]
		dep := &dependencyDecoding{name: name, cond: DependReady}
		if sub, isTable := v.v.(map[string]*node); isTable {
			decodeKeys(d, sub, dep, dependsOnKeys)
		} else {
			c, ok := d.enum(v, DependReady, DependRunning, DependCompleted)
			dep.cond, dep.bad = c, !ok
		}
		if dep.bad {
			continue
		}
		if dep.restartWith {
			if p.BoundTo == nil {
				p.BoundTo = map[string]bool{}
			}
			p.BoundTo[name] = true
		}
		cond[name] = dep.cond
		p.DependsOn = append(p.DependsOn, name)
		d.deps[p] = append(d.deps[p], v.path)
	}
	p.DependsOnCond = cond
}

// RestartWith reports whether p is stopped, and started again, with its
// dependency dep (restart_with = true, as systemd's PartOf=). By default a
// dependency only orders the start: its restart or stop leaves p running,
// as its crash does.
func (p *Program) RestartWith(dep string) bool {
	return p.BoundTo[dep]
}

// checkCompleted reports "completed" conditions on programs that never
// complete for good: with restart = "always" a successful exit is
// restarted too.
func (d *decoder) checkCompleted(cfg *Config) {
	for _, p := range cfg.Programs {
		for i, dep := range p.DependsOn {
			if p.DependsOnCondition(dep) != DependCompleted {
				continue
			}
			if q := cfg.Program(dep); q != nil && q.Restart == RestartAlways {
				d.errorf(d.deps[p][i], `%q is restarted even after a successful exit (restart = "always"), so it never completes: give it restart = "on-failure" or "never", or wait for "ready"`, dep)
			}
		}
	}
}
