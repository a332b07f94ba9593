package config

import (
	"fmt"
	"os/user"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A key is one key of a TOML table: its name, and how its value lands in
// the struct being decoded (T). A table's rows are the only list of its
// keys: the unknown-key check and the documentation test read them, so
// adding a key is a field in the struct and a row here.
type key[T any] struct {
	name   string
	decode func(d *decoder, dst T, v *node)
}

// decodeKeys reports every key of t that keys does not list, then decodes
// the present ones in the rows' order (which is why env_file comes before
// env, and dir before watch).
func decodeKeys[T any](d *decoder, t map[string]*node, dst T, keys []key[T]) {
	d.known(t, keyNames(keys)...)
	for _, k := range keys {
		if v := t[k.name]; v != nil {
			k.decode(d, dst, v)
		}
	}
}

func keyNames[T any](keys []key[T]) []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name
	}
	return names
}

// supervisorKeys are the keys of [supervisor].
var supervisorKeys = []key[*Supervisor]{
	{"socket", func(d *decoder, s *Supervisor, v *node) {
		if p, ok := d.path(v); ok {
			if len(p) > maxSocketPath {
				d.errorf(v.path, "%s is %d bytes long; a unix socket address holds at most %d", p, len(p), maxSocketPath)
			}
			s.Socket = p
		}
	}},
	{"socket_group", func(d *decoder, s *Supervisor, v *node) {
		g, ok := d.str(v)
		if !ok {
			return
		}
		// As the server takes it: a gid as is, a name from the group
		// database, so that check refuses what run would.
		if n, err := strconv.Atoi(g); err != nil || n < 0 {
			if _, err := user.LookupGroup(g); err != nil {
				d.errorf(v.path, "no group %q on this machine", g)
			}
		}
		s.SocketGroup = g
	}},
	{"workers", func(d *decoder, s *Supervisor, v *node) { setInt(d, v, 1, 1024, &s.Workers) }},
	{"shutdown_timeout", func(d *decoder, s *Supervisor, v *node) { setDuration(d, v, &s.ShutdownTimeout) }},
	{"log_format", func(d *decoder, s *Supervisor, v *node) { s.LogFormat, _ = d.enum(v, "text", "json") }},
	{"log_level", func(d *decoder, s *Supervisor, v *node) { s.LogLevel, _ = d.enum(v, "debug", "info", "warn", "error") }},
	{"exit_on", func(d *decoder, s *Supervisor, v *node) {
		names, _ := d.strs(v)
		for i, name := range names {
			d.exitOn = append(d.exitOn, elemOf(v, i))
			s.ExitOn = append(s.ExitOn, name)
		}
	}},
	{"watch_config", func(d *decoder, s *Supervisor, v *node) { setBool(d, v, &s.WatchConfig) }},
	{"probe_jitter", func(d *decoder, s *Supervisor, v *node) { setBool(d, v, &s.ProbeJitter) }},
	{"strict_shutdown", func(d *decoder, s *Supervisor, v *node) { setBool(d, v, &s.StrictShutdown) }},
	{"log_ring", func(d *decoder, s *Supervisor, v *node) {
		if size, ok := d.size(v); ok {
			if size < 4<<10 || size > 64<<20 {
				d.errorf(v.path, "must be between 4KiB and 64MiB (got %d bytes)", size)
				return
			}
			s.LogRing = int(size)
		}
	}},
	{"max_connections", func(d *decoder, s *Supervisor, v *node) { setInt(d, v, 4, 65536, &s.MaxConnections) }},
	{"max_followers", func(d *decoder, s *Supervisor, v *node) {
		// After max_connections, whose value it is checked against.
		if setInt(d, v, 1, 65536, &s.MaxFollowers) && s.MaxFollowers >= s.MaxConnections {
			d.errorf(v.path, "must be below max_connections (%d), or followers leave no room for commands", s.MaxConnections)
		}
	}},
	{"http", func(d *decoder, s *Supervisor, v *node) {
		if addr, ok := d.str(v); ok {
			if err := checkListenAddr(addr); err != nil {
				d.errorf(v.path, "%v", err)
				return
			}
			s.HTTP = addr
		}
	}},
	{"http_token_file", func(d *decoder, s *Supervisor, v *node) {
		p, ok := d.path(v)
		if !ok {
			return
		}
		if _, err := ReadTokenFile(p); err != nil {
			d.errorf(v.path, "%v", err)
			return
		}
		s.HTTPTokenFile = p
	}},
}

// programDecoding is one program table being decoded: the program, and
// what its keys leave for the checks that involve several of them.
type programDecoding struct {
	*Program
	isDefaults bool      // [defaults] alone: values only, no cross-key checks
	env        envBudget // env_file entries in order, then env over them
	notify     *node     // notify, when it asks for a readiness signal
	logLine    *node     // ready_log_line, when valid
}

// programKeys are the keys of [program.NAME] and [defaults]. Order matters
// where one key reads another's value: env_file before env, dir before
// watch, notify before notify_fd and watchdog.
var programKeys = []key[*programDecoding]{
	{"command", func(d *decoder, p *programDecoding, v *node) { p.Command, _ = d.command(v) }},
	{"dir", func(d *decoder, p *programDecoding, v *node) { p.Dir, _ = d.path(v) }},
	{"env_file", (*decoder).envFiles},
	{"env", func(d *decoder, p *programDecoding, v *node) { d.env(v, p) }},
	{"user", func(d *decoder, p *programDecoding, v *node) { p.User, _ = d.identity(v) }},
	{"group", func(d *decoder, p *programDecoding, v *node) { p.Group, _ = d.identity(v) }},
	{"groups", func(d *decoder, p *programDecoding, v *node) {
		for i, x := range d.array(v, "an array of group names or ids") {
			if g, ok := d.identity(&node{path: elem(v.path, i), v: x}); ok {
				p.Groups = append(p.Groups, g)
			}
		}
	}},
	{"restart", func(d *decoder, p *programDecoding, v *node) {
		if s, ok := d.enum(v, string(RestartAlways), string(RestartOnFailure), string(RestartNever)); ok {
			p.Restart = RestartPolicy(s)
		}
	}},
	{"success_exit_codes", func(d *decoder, p *programDecoding, v *node) {
		arr := d.array(v, "an array of exit codes like [0, 3]")
		if arr == nil {
			return
		}
		p.SuccessExitCodes = nil
		for i, x := range arr {
			if c, ok := d.integer(&node{path: elem(v.path, i), v: x}, 0, 255); ok {
				p.SuccessExitCodes = append(p.SuccessExitCodes, int(c))
			}
		}
	}},
	{"restart_rules", func(d *decoder, p *programDecoding, v *node) { p.RestartRules = d.restartRules(v) }},
	{"instances", func(d *decoder, p *programDecoding, v *node) { setInt(d, v, 1, 10000, &p.Instances) }},
	{"autostart", func(d *decoder, p *programDecoding, v *node) { setBool(d, v, &p.Autostart) }},
	{"critical", func(d *decoder, p *programDecoding, v *node) { setBool(d, v, &p.Critical) }},
	{"sidecar", func(d *decoder, p *programDecoding, v *node) { setBool(d, v, &p.Sidecar) }},
	{"depends_on", func(d *decoder, p *programDecoding, v *node) { d.dependsOn(p.Program, v) }},
	{"stop_signal", func(d *decoder, p *programDecoding, v *node) {
		if sig, ok := d.signal(v); ok {
			p.StopSignal = sig
		}
	}},
	{"stop_timeout", func(d *decoder, p *programDecoding, v *node) { setDuration(d, v, &p.StopTimeout) }},
	{"exit_tail_lines", func(d *decoder, p *programDecoding, v *node) { setInt(d, v, 1, MaxExitTailLines, &p.ExitTailLines) }},
	{"min_stop_grace", func(d *decoder, p *programDecoding, v *node) { setDuration(d, v, &p.MinStopGrace) }},
	{"backoff", func(d *decoder, p *programDecoding, v *node) { p.Backoff = d.backoff(v, p.isDefaults) }},
	{"sandbox", func(d *decoder, p *programDecoding, v *node) { p.Sandbox = d.sandbox(v, p.isDefaults) }},
	{"hooks", func(d *decoder, p *programDecoding, v *node) { p.Hooks = d.hooks(v, p.isDefaults) }},
	{"stdout", func(d *decoder, p *programDecoding, v *node) { p.Stdout = d.output(v) }},
	{"stderr", func(d *decoder, p *programDecoding, v *node) { p.Stderr, p.StderrToStdout = d.stderr(v) }},
	{"watch", func(d *decoder, p *programDecoding, v *node) { p.Watch = d.watch(v, p.Dir) }},
	{"rollout", func(d *decoder, p *programDecoding, v *node) { p.Rollout = d.rollout(v) }},
	// Socket activation (listen.go).
	{"listen", func(d *decoder, p *programDecoding, v *node) { d.listen(v, p) }},
	// Health (health.go).
	{"probes", func(d *decoder, p *programDecoding, v *node) { p.Probes = d.probes(v, p.isDefaults) }},
	{"notify", func(d *decoder, p *programDecoding, v *node) {
		if s, ok := d.enum(v, "sd_notify", "fd", "none"); ok && s != "none" {
			p.Notify, p.notify = s, v
		}
	}},
	{"notify_fd", func(d *decoder, p *programDecoding, v *node) {
		if setInt(d, v, 3, 1023, &p.NotifyFD) && !p.isDefaults && p.Notify != NotifyFD {
			d.errorf(v.path, `applies only with notify = "fd"`)
		}
	}},
	{"watchdog", func(d *decoder, p *programDecoding, v *node) {
		dur, ok := d.duration(v)
		switch {
		case !ok:
			return
		case dur <= 0:
			d.errorf(v.path, "must be more than 0 (leave it out for no watchdog)")
		case !p.isDefaults && p.Notify != NotifySdNotify:
			d.errorf(v.path, `needs notify = "sd_notify": the program pings with WATCHDOG=1`)
		}
		p.Watchdog = dur
	}},
	{"ready_log_line", func(d *decoder, p *programDecoding, v *node) {
		s, ok := d.str(v)
		if !ok {
			return
		}
		if s == "" {
			d.errorf(v.path, "must be a regular expression, not empty")
		} else if _, err := regexp.Compile(s); err != nil {
			d.errorf(v.path, "invalid regular expression: %v", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		} else {
			p.ReadyLogLine, p.logLine = s, v
		}
	}},
	// Schedule (schedule.go); timezone before schedule, which is read in it.
	{"timezone", (*decoder).timezone},
	{"schedule", (*decoder).schedule},
	{"concurrency", (*decoder).concurrency},
	{"starting_deadline", func(d *decoder, p *programDecoding, v *node) { setPositive(d, v, &p.Schedule.StartingDeadline) }},
	{"max_runtime", func(d *decoder, p *programDecoding, v *node) { setPositive(d, v, &p.Schedule.MaxRuntime) }},
	{"jitter", func(d *decoder, p *programDecoding, v *node) { setPositive(d, v, &p.Schedule.Jitter) }},
}

// rolloutKeys are the keys of [program.NAME.rollout]: max_unavailable is
// a count or a percentage like "25%"; timeout a duration above 0.
var rolloutKeys = []key[*Rollout]{
	{"max_unavailable", func(d *decoder, r *Rollout, v *node) {
		switch x := v.v.(type) {
		case int64:
			setInt(d, v, 1, 10000, &r.MaxUnavailable)
		case string:
			pct, err := strconv.Atoi(strings.TrimSuffix(x, "%"))
			if !strings.HasSuffix(x, "%") || err != nil || pct < 1 || pct > 100 {
				d.errorf(v.path, `must be a count like 1 or a percentage like "25%%" (got %q)`, x)
				return
			}
			r.Percent = pct
		default:
			d.errorf(v.path, `must be a count like 1 or a percentage like "25%%" (got %s)`, describe(v.v))
		}
	}},
	{"timeout", func(d *decoder, r *Rollout, v *node) {
		if dur, ok := d.duration(v); ok {
			if dur <= 0 {
				d.errorf(v.path, "must be more than 0")
			}
			r.Timeout = dur
		}
	}},
}

func (d *decoder) rollout(n *node) Rollout {
	var r Rollout
	decodeKeys(d, d.table(n, `a table like { max_unavailable = 1, timeout = "2m" }`), &r, rolloutKeys)
	return r
}

// envFiles reads env_file (a path or an array of them) into p.env, in
// order. A file named by several programs (or by [defaults]) is read once
// per load, and its strings are shared.
func (d *decoder) envFiles(p *programDecoding, v *node) {
	files, _ := d.strs(v)
	for i, f := range files {
		path := elemOf(v, i)
		if f == "" {
			d.errorf(path, "must be a non-empty path")
			continue
		}
		abs := d.abs(f)
		p.EnvFiles = append(p.EnvFiles, abs)
		read, ok := d.envFileCache[abs]
		if !ok {
			read = &envFileRead{reported: map[string]bool{}}
			read.vars, read.err = LoadEnvFile(abs)
			d.envFileCache[abs] = read
		}
		if read.err != nil {
			// [defaults] names it for every program: report it once.
			if k := keyString(path); read.reported[k] {
				continue
			} else {
				read.reported[k] = true
			}
		}
		if list, ok := read.err.(ErrorList); ok {
			for _, e := range list {
				d.errorf(path, "%v", e)
			}
			continue
		} else if read.err != nil {
			d.errorf(path, "%v", read.err)
			continue
		}
		for k, val := range read.vars {
			if err := d.setEnv(p, k, val); err != nil {
				d.errorf(path, "%v", err)
				break
			}
		}
	}
}

// countInstances counts the environment of each instance of p past the
// first (setEnv counted one) against maxConfigEnvSize: each instance's
// process is given a copy.
func (d *decoder) countInstances(p *Program, n *node) {
	if p.Instances <= 1 || len(p.Env) == 0 {
		return
	}
	size := 0
	for k, v := range p.Env {
		size += envCost(k, v)
	}
	d.envBytes += size * (p.Instances - 1)
	if d.envBytes > maxConfigEnvSize {
		d.errorf(append(slices.Clip(n.path), "instances"), "%v", errConfigEnvTooLarge)
	}
}

// envFileRead is one env_file as LoadEnvFile read it.
type envFileRead struct {
	vars     map[string]string
	err      error
	reported map[string]bool // the key paths its error was reported at
}

// setEnv sets a variable of p's environment within maxEnvSize, and within
// what all the programs' environments may hold together: a variable set
// for each of thousands of programs costs each of them a map entry.
func (d *decoder) setEnv(p *programDecoding, k, v string) error {
	if d.envVars+1 > maxConfigEnvVars {
		return fmt.Errorf("more than %d variables in the environments of all programs together", maxConfigEnvVars)
	}
	if d.envBytes+envCost(k, v) > maxConfigEnvSize {
		return errConfigEnvTooLarge
	}
	if err := p.env.set(k, v); err != nil {
		return err
	}
	d.envVars++
	d.envBytes += envCost(k, v)
	return nil
}

// elemOf is the key path of the i-th value of v: v's own for a single
// value that stands for a one-element array, elem(v.path, i) in an array.
func elemOf(v *node, i int) []string {
	if _, isArr := v.v.([]any); isArr {
		return elem(v.path, i)
	}
	return v.path
}

// array is v's elements, or nil with an error when v is not an array.
func (d *decoder) array(v *node, what string) []any {
	arr, ok := v.v.([]any)
	if !ok {
		d.errorf(v.path, "must be %s (got %s)", what, describe(v.v))
	}
	return arr
}

// setInt, setDuration and setBool store a valid value and leave dst as it
// was otherwise (the error is recorded); they report whether they stored.
func setInt(d *decoder, v *node, lo, hi int64, dst *int) bool {
	i, ok := d.integer(v, lo, hi)
	if ok {
		*dst = int(i)
	}
	return ok
}

func setDuration(d *decoder, v *node, dst *time.Duration) bool {
	dur, ok := d.duration(v)
	if ok {
		*dst = dur
	}
	return ok
}

func setBool(d *decoder, v *node, dst *bool) bool {
	b, ok := d.boolean(v)
	if ok {
		*dst = b
	}
	return ok
}

// A keyTable is one table's keys: path is where the table sits, dotted,
// with "*" for a name the file chooses (a program, a dependency, a
// rule's index).
type keyTable struct {
	path  string
	names []string
}

// keyTables are every table's keys, read from the rows: for Keys and for
// the check that the example documents each one. [defaults] takes the
// keys of program.*.
func keyTables() []keyTable {
	const p = "program.*"
	tables := []keyTable{
		{"supervisor", keyNames(supervisorKeys)},
		{"procfile", keyNames(procfileKeys)},
		{p, keyNames(programKeys)},
		{p + ".sandbox", keyNames(sandboxKeys)},
		{p + ".sandbox.rlimits", keyNames(rlimitsKeys())},
		{p + ".sandbox.rlimits.*", keyNames(rlimitKeys)},
		{p + ".backoff", keyNames(backoffKeys)},
		{p + ".hooks", keyNames(hooksKeys)},
		{p + ".stdout", keyNames(outputKeys)},
		{p + ".stderr", keyNames(outputKeys)},
		{p + ".watch", keyNames(watchKeys)},
		{p + ".rollout", keyNames(rolloutKeys)},
		{p + ".probes", keyNames(probesKeys)},
		{p + ".depends_on.*", keyNames(dependsOnKeys)},
		{p + ".restart_rules.*", keyNames(restartRuleKeys)},
		{p + ".restart_rules.*.exit_codes", keyNames(restartRuleMatchKeys)},
	}
	for _, h := range keyNames(hooksKeys) {
		tables = append(tables, keyTable{p + ".hooks." + h, keyNames(hookKeys)}, keyTable{p + ".hooks." + h + ".http", keyNames(httpHookKeys)})
	}
	for _, k := range keyNames(probesKeys) {
		tables = append(tables, keyTable{p + ".probes." + k, keyNames(probeKeys)}, keyTable{p + ".probes." + k + ".http", keyNames(httpProbeKeys)})
	}
	return tables
}

// Keys returns the dotted path of every key a config file may set, sorted,
// with "*" for a name the file chooses: "supervisor.socket",
// "program.*.stop_timeout", "program.*.hooks.pre_start.timeout",
// "program.*.depends_on.*.condition". A table that is itself a key
// ("program.*.hooks") is listed as well as its keys. [defaults] takes the
// keys under program.*. It is read from the tables' rows, so that what
// checks a config against the keys (the exporters' tests) sees a new key
// as soon as it can be set.
func Keys() []string {
	var keys []string
	for _, t := range keyTables() {
		for _, name := range t.names {
			keys = append(keys, t.path+"."+name)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
