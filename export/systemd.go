package export

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/internal/execpath"
	"github.com/supervise-dev/supervise/internal/unixsig"
)

// SystemdOptions shape the exported units.
type SystemdOptions struct {
	// Prefix names the units: PREFIX-NAME.service (PREFIX-NAME@.service
	// for a program with instances) and PREFIX.target, which wants them.
	Prefix string
	// Version is the systemd the units are for; from 254 the crash backoff
	// maps to RestartSteps= and RestartMaxDelaySec=. 0 means 252 (Debian
	// 12's).
	Version int
}

// DefaultSystemdVersion is the systemd assumed when none is named.
const DefaultSystemdVersion = 252

// Systemd returns one unit per program and a target that wants every
// autostart one, with a warning for each key systemd cannot express.
func Systemd(cfg *config.Config, opts SystemdOptions) ([]File, []Warning, error) {
	if opts.Prefix == "" {
		return nil, nil, fmt.Errorf("export systemd: a unit name prefix is needed")
	}
	if !validUnitPart(opts.Prefix) {
		return nil, nil, fmt.Errorf("export systemd: prefix %q: use letters, digits, '-', '_' and '.'", opts.Prefix)
	}
	if opts.Version == 0 {
		opts.Version = DefaultSystemdVersion
	}
	var ws warnings
	if len(cfg.Supervisor.ExitOn) > 0 {
		ws.add("", "supervisor.exit_on", "not mapped: systemd stops nothing when one unit ends (consider OnFailure= or StopPropagatedFrom= by hand)")
	}
	if cfg.Supervisor.HTTP != "" {
		ws.add("", "supervisor.http", "not mapped: systemd's state is in systemctl and the journal, not on an HTTP port")
	}
	ws.ownSettings(cfg.Supervisor, "systemd")
	byName := map[string]*config.Program{}
	for _, p := range cfg.Programs {
		byName[p.Name] = p
	}
	var files []File
	var wants []setting
	refused := 0
	for _, p := range cfg.Programs {
		if !validUnitPart(p.Name) {
			ws.add(p.Name, "name", "%q cannot name a unit: use letters, digits, '-', '_' and '.'", p.Name)
			refused++
			continue
		}
		e := &unitWriter{opts: opts, ws: &ws, p: p, byName: byName}
		data := e.service()
		timer := e.timerFile() // a scheduled program's .timer (systemd_timer.go), wanted instead of it
		files = append(files, File{Name: unitFile(opts.Prefix, p), Data: data})
		if f, ok := e.socket(); ok { // systemd_socket.go
			files = append(files, f)
			wants = append(wants, word(f.Name))
		}
		refused += e.refused
		wanted := instanceUnits(opts.Prefix, p)
		if timer != nil {
			files, wanted = append(files, *timer), []string{timer.Name}
		}
		if p.Autostart {
			for _, u := range wanted {
				wants = append(wants, word(u))
			}
		}
	}
	t := &unitWriter{opts: opts, ws: &ws, p: &config.Program{}}
	t.u("Description", "", join("", lit(opts.Prefix+": the programs of "), display(cfg.File)))
	if len(wants) > 0 {
		t.u("Wants", "", join(" ", wants...))
	}
	t.s("WantedBy", "", word("multi-user.target"))
	refused += t.refused
	if refused > 0 {
		return nil, ws, fmt.Errorf("export systemd: %d values cannot be written so that systemd reads them as supervise does (see the warnings)", refused)
	}
	data := "# Exported by supervise from " + displayComment(cfg.File) + ".\n[Unit]\n" + t.unit.String() + "\n[Install]\n" + t.svc.String()
	files = append(files, File{Name: opts.Prefix + ".target", Data: []byte(data)})
	return files, ws, nil
}

// unitFile is the file of p's unit: a template when it has instances.
func unitFile(prefix string, p *config.Program) string {
	if p.Instances > 1 {
		return prefix + "-" + p.Name + "@.service"
	}
	return prefix + "-" + p.Name + ".service"
}

// instanceUnits are the units that run p: NAME@0 … NAME@N-1 for a template.
func instanceUnits(prefix string, p *config.Program) []string {
	if p.Instances <= 1 {
		return []string{prefix + "-" + p.Name + ".service"}
	}
	out := make([]string, p.Instances)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%s@%d.service", prefix, p.Name, i)
	}
	return out
}

type unitWriter struct {
	opts    SystemdOptions
	ws      *warnings
	p       *config.Program
	byName  map[string]*config.Program
	unit    strings.Builder
	svc     strings.Builder
	refused int // values left out, each with a warning: the export fails
}

func (e *unitWriter) warn(key, format string, args ...any) { e.ws.add(e.p.Name, key, format, args...) }

// u and s write a directive into [Unit] and [Service]; configKey is the
// key the value comes from, named when it cannot be written.
func (e *unitWriter) u(k, configKey string, v setting) { e.put(&e.unit, k, configKey, v) }
func (e *unitWriter) s(k, configKey string, v setting) { e.put(&e.svc, k, configKey, v) }

func (e *unitWriter) put(b *strings.Builder, k, configKey string, v setting) {
	if err := directive(b, k, v); err != nil {
		if configKey == "" {
			configKey = k
		}
		e.warn(configKey, "%v", err)
		e.refused++
	}
}

func (e *unitWriter) service() []byte {
	p := e.p
	e.u("Description", "name", join("", lit(e.opts.Prefix+": "), display(p.Name), lit(instanceSuffix(p))))
	e.u("PartOf", "", word(e.opts.Prefix+".target"))
	e.deps()
	e.socketDeps() // systemd_socket.go

	switch p.Notify {
	case config.NotifySdNotify:
		e.s("Type", "notify", lit("notify"))
		if p.Watchdog > 0 {
			e.s("WatchdogSec", "watchdog", lit(seconds(p.Watchdog)))
		}
	case config.NotifyFD:
		e.s("Type", "notify", lit("exec"))
		e.warn("notify", `"fd" (the s6 notification descriptor) has no systemd equivalent: the unit is up once exec succeeds (Type=exec); use sd_notify for Type=notify`)
	default:
		e.s("Type", "notify", lit("exec"))
	}
	if p.ReadyLogLine != "" {
		e.warn("ready_log_line", "systemd cannot watch output for readiness: the unit is up once exec succeeds")
	}
	e.s("ExecStart", "command", e.command(p.Command, "command"))
	if p.Dir != "" {
		e.s("WorkingDirectory", "dir", plain(p.Dir))
	}
	e.env()
	if p.User != "" {
		e.s("User", "user", plain(p.User))
	}
	if p.Group != "" {
		e.s("Group", "group", plain(p.Group))
	}
	if len(p.Groups) > 0 {
		groups := make([]setting, len(p.Groups))
		for i, g := range p.Groups {
			groups[i] = word(g)
		}
		e.s("SupplementaryGroups", "groups", join(" ", groups...))
	}
	e.restart()
	e.stop()
	e.hooks()
	e.sandbox()
	e.outputs()
	e.jobService()
	e.unmapped()

	var b strings.Builder
	fmt.Fprintf(&b, "# Exported by supervise from program %s (line %d).\n[Unit]\n%s\n[Service]\n%s", displayComment(p.Name), p.Line, e.unit.String(), e.svc.String())
	return []byte(b.String())
}

func instanceSuffix(p *config.Program) string {
	if p.Instances > 1 {
		return " instance %i"
	}
	return ""
}

// deps: After= each dependency, and Wants= it: its stop or restart
// leaves this program running, as in supervise (Requires= would stop it
// too); BindsTo= where restart_with = true binds this program to it.
func (e *unitWriter) deps() {
	var after, wants, binds []setting
	for _, d := range e.p.DependsOn {
		dp := e.byName[d]
		if dp == nil {
			continue
		}
		for _, u := range instanceUnits(e.opts.Prefix, dp) {
			after = append(after, word(u))
			if e.p.RestartWith(d) {
				binds = append(binds, word(u))
			} else {
				wants = append(wants, word(u))
			}
		}
		switch e.p.DependsOnCondition(d) {
		case config.DependReady:
			if dp.Notify != config.NotifySdNotify && dp.HasReadinessCheck() {
				e.warn("depends_on."+d, "waits for %q to be ready, but systemd knows readiness only through sd_notify: the order is by start", d)
			}
		case config.DependCompleted:
			e.warn("depends_on."+d, "waits for %q to complete: make it Type=oneshot by hand for systemd to wait for its end", d)
		}
	}
	if len(after) > 0 {
		e.u("After", "depends_on", join(" ", after...))
	}
	if len(wants) > 0 {
		e.u("Wants", "depends_on", join(" ", wants...))
	}
	if len(binds) > 0 {
		e.u("BindsTo", "depends_on", join(" ", binds...))
	}
}

// command is argv as an Exec directive's command line, its program the
// absolute path supervise would run: a relative path from the program's
// dir, a bare name as found on its PATH now. systemd reads a leading
// + @ - : ! of the first word as prefixes (+ runs it as root whatever
// User= says) and no quoting hides them; an absolute path starts with
// '/', and a bare name found nowhere that starts with one is refused.
func (e *unitWriter) command(argv []string, key string) setting {
	if len(argv) == 0 {
		return setting{why: "is empty"}
	}
	path := argv[0]
	switch {
	case filepath.IsAbs(path):
	case strings.Contains(path, "/"):
		path = filepath.Join(e.p.Dir, path)
	default:
		env := []string{"PATH=" + os.Getenv("PATH")}
		if v, ok := e.p.Env["PATH"]; ok {
			env = []string{"PATH=" + v}
		}
		found, err := execpath.Look(path, env, e.p.Dir)
		if err != nil {
			e.warn(key, "%q is not found on this machine's PATH: written as it is (systemd searches its own fixed PATH)", path)
		} else {
			path = filepath.Join(e.p.Dir, found) // found is absolute, or relative to dir
			if filepath.IsAbs(found) {
				path = found
			}
		}
	}
	if !filepath.IsAbs(path) && strings.ContainsAny(path[:1], execPrefixes) {
		return setting{value: argv[0], why: "starts with a character systemd reads as a command prefix, and no quoting hides it: name the program by its absolute path"}
	}
	if strings.Contains(path, "$") {
		// systemd turns $$ into $ in the arguments it runs, not in the
		// path it executes: no spelling serves both.
		return setting{value: path, why: "holds a $, which systemd cannot take literally in the program's path"}
	}
	words := make([]setting, len(argv))
	words[0] = execWord(path)
	for i, a := range argv[1:] {
		words[i+1] = execWord(a)
	}
	return join(" ", words...)
}

// execPrefixes are the characters systemd reads before the program of a
// command line (systemd.service(5), "Command lines").
const execPrefixes = "@-:+!|"

func (e *unitWriter) env() {
	p := e.p
	if len(p.EnvFiles) > 0 {
		e.warn("env_file", "inlined as Environment=: supervise expands ${VAR} in env files, systemd's EnvironmentFile= does not")
	}
	for _, k := range sortedKeys(p.Env) {
		e.s("Environment", "env."+k, assignment(k, p.Env[k]))
	}
	e.s("Environment", "name", assignment("SUPERVISE_PROGRAM", p.Name))
	if p.Instances > 1 {
		e.s("Environment", "instances", lit("SUPERVISE_INSTANCE=%i"))
	} else {
		e.s("Environment", "instances", lit("SUPERVISE_INSTANCE=0"))
	}
	if p.Port != 0 && p.Instances > 1 {
		e.warn("PORT", "each instance's PORT (%d + instance) cannot be computed by a template: set it per instance with a drop-in", p.Port)
	} else if p.Port != 0 {
		e.s("Environment", "PORT", lit("PORT="+strconv.Itoa(p.Port)))
	}
}

func (e *unitWriter) restart() {
	p := e.p
	switch p.Restart {
	case config.RestartAlways:
		e.s("Restart", "restart", lit("always"))
	case config.RestartOnFailure:
		e.s("Restart", "restart", lit("on-failure"))
	default:
		e.s("Restart", "restart", lit("no"))
	}
	if codes := slices.DeleteFunc(slices.Clone(p.SuccessExitCodes), func(c int) bool { return c == 0 }); len(codes) > 0 {
		e.s("SuccessExitStatus", "success_exit_codes", lit(joinInts(codes)))
	}
	for i, r := range p.RestartRules {
		key := fmt.Sprintf("restart_rules[%d]", i)
		if r.Operator == config.RuleIn {
			e.s("RestartForceExitStatus", key, lit(joinInts(r.Values)))
		} else {
			e.warn(key, "a NotIn rule has no systemd equivalent (RestartForceExitStatus= lists codes, not their complement)")
		}
	}
	if p.Restart != config.RestartNever {
		// systemd's start limit (5 starts in 10s by default) fails the
		// unit for good; supervise never gives up, it backs off.
		e.u("StartLimitIntervalSec", "restart", lit("0"))
	}
	b := p.Backoff
	e.s("RestartSec", "backoff.initial", lit(seconds(b.Initial)))
	if e.opts.Version >= 254 && b.Max > b.Initial && b.Initial > 0 {
		steps := int(math.Ceil(math.Log2(float64(b.Max) / float64(b.Initial))))
		e.s("RestartSteps", "backoff.max", lit(strconv.Itoa(steps)))
		e.s("RestartMaxDelaySec", "backoff.max", lit(seconds(b.Max)))
	} else if b.Max > b.Initial {
		e.warn("backoff", "systemd %d restarts after a fixed RestartSec=%s; the doubling up to %s needs systemd 254 (--systemd-version 254)", e.opts.Version, seconds(b.Initial), seconds(b.Max))
	}
	if b.ResetAfter != config.DefaultBackoffResetAfter {
		e.warn("backoff.reset_after", "systemd has no reset after a stable run (its start limit, StartLimitIntervalSec=, counts starts instead)")
	}
}

func (e *unitWriter) stop() {
	p := e.p
	if p.StopSignal != 0 {
		e.s("KillSignal", "stop_signal", lit("SIG"+unixsig.Name(p.StopSignal)))
	}
	if p.StopTimeout > 0 {
		e.s("TimeoutStopSec", "stop_timeout", lit(seconds(p.StopTimeout)))
	}
	if p.MinStopGrace != config.DefaultMinStopGrace {
		e.warn("min_stop_grace", "systemd gives ExecStop= and the stop signal TimeoutStopSec= each; there is no floor to map")
	}
}

func (e *unitWriter) hooks() {
	h := e.p.Hooks
	for _, x := range []struct {
		key, directive string
		hook           *config.Hook
	}{
		{"hooks.pre_start", "ExecStartPre", h.PreStart},
		{"hooks.post_start", "ExecStartPost", h.PostStart},
		{"hooks.pre_stop", "ExecStop", h.PreStop},
		{"hooks.post_stop", "ExecStopPost", h.PostStop},
	} {
		if x.hook == nil {
			continue
		}
		if x.hook.HTTP != nil {
			e.warn(x.key, "an HTTP hook has no systemd equivalent: run curl from a command hook instead")
			continue
		}
		cmd := x.hook.Command
		if x.hook.Sleep > 0 { // systemd has no sleep action: sleep(1) does it
			cmd = []string{"sleep", strconv.FormatFloat(x.hook.Sleep.Seconds(), 'f', -1, 64)}
		}
		argv := e.command(cmd, x.key)
		switch x.directive {
		case "ExecStop":
			// systemd runs ExecStop= whenever a started service stops, after
			// a crash too; supervise runs pre_stop only before it stops a
			// running process. Until the main process has exited $EXIT_CODE
			// is unset (systemd.exec(7)): the guard keeps pre_stop to stops
			// that were asked for.
			argv = join(" ", execWord("/bin/sh"), execWord("-c"), execWord(stopGuard), execWord("sh"), argv)
		case "ExecStopPost":
			argv = join("", lit("-"), argv) // post_stop's failure is only logged
		}
		e.s(x.directive, x.key, argv)
		if x.directive == "ExecStopPost" || usesExitVars(x.hook.Command) {
			e.warn(x.key, "SUPERVISE_EXIT_CODE, SUPERVISE_EXIT_SIGNAL and SUPERVISE_EXIT_REASON are not set under systemd: ExecStop= and ExecStopPost= get $EXIT_CODE (exited, killed or dumped), $EXIT_STATUS (the code or the signal's name) and $SERVICE_RESULT instead")
		}
		if x.hook.Timeout != config.DefaultHookTimeout {
			e.warn(x.key+".timeout", "systemd bounds hooks by TimeoutStartSec= and TimeoutStopSec=, not one by one")
		}
	}
}

// stopGuard runs its arguments only while the main process still runs:
// systemd sets $EXIT_CODE for ExecStop= once it has exited.
const stopGuard = `[ -z "${EXIT_CODE-}" ] || exit 0; exec "$@"`

// usesExitVars reports whether a hook's command names one of the exit
// variables supervise gives hooks.
func usesExitVars(argv []string) bool {
	return slices.ContainsFunc(argv, func(a string) bool { return strings.Contains(a, "SUPERVISE_EXIT_") })
}

func (e *unitWriter) sandbox() {
	sb := e.p.Sandbox
	if sb.MemoryMax > 0 {
		e.s("MemoryMax", "sandbox.memory_max", lit(strconv.FormatInt(sb.MemoryMax, 10)))
	}
	if sb.CPUMax > 0 {
		e.s("CPUQuota", "sandbox.cpu_max", lit(strconv.FormatFloat(sb.CPUMax*100, 'f', -1, 64)+"%"))
	}
	if sb.PidsMax > 0 {
		e.s("TasksMax", "sandbox.pids_max", lit(strconv.FormatInt(sb.PidsMax, 10)))
	}
	for _, ns := range sb.Namespaces {
		switch ns {
		case "net":
			e.s("PrivateNetwork", "sandbox.namespaces", lit("yes"))
		case "ipc":
			e.s("PrivateIPC", "sandbox.namespaces", lit("yes"))
		case "uts":
			e.s("ProtectHostname", "sandbox.namespaces", lit("yes"))
		case "mount":
			e.s("PrivateTmp", "sandbox.namespaces", lit("yes"))
			e.warn("sandbox.namespaces", "mount becomes PrivateTmp=yes (a mount namespace with a private /tmp): systemd has no bare mount namespace")
		case "user":
			e.s("PrivateUsers", "sandbox.namespaces", lit("yes"))
		case "pid":
			e.warn("sandbox.namespaces", "pid has no systemd equivalent before PrivatePIDs= (systemd 257)")
		}
	}
	if sb.Hostname != "" {
		e.warn("sandbox.hostname", "systemd sets no hostname per unit (ProtectHostname= only keeps the host's)")
	}
	if sb.NoNewPrivileges {
		e.s("NoNewPrivileges", "sandbox.no_new_privileges", lit("yes"))
	}
	if sb.Umask >= 0 {
		e.s("UMask", "sandbox.umask", lit(fmt.Sprintf("%04o", sb.Umask)))
	}
	for _, name := range sortedKeys(sb.Rlimits) {
		l := sb.Rlimits[name]
		e.s("Limit"+strings.ToUpper(name), "sandbox.rlimits."+name, lit(rlimit(l.Soft)+":"+rlimit(l.Hard)))
	}
}

func (e *unitWriter) outputs() {
	for _, x := range []struct {
		key, directive string
		o              config.Output
	}{{"stdout", "StandardOutput", e.p.Stdout}, {"stderr", "StandardError", e.p.Stderr}} {
		if x.o.File == "" {
			continue // the journal, as the console
		}
		e.s(x.directive, x.key+".file", join("", lit("append:"), plain(x.o.File)))
		e.warn(x.key+".max_size", "systemd does not rotate %q: rotate it with logrotate, or use the journal", x.o.File)
	}
	// StandardError= defaults to inherit, a copy of standard output's
	// descriptor: the merge stderr = "stdout" asks for, and a StandardOutput=
	// file's to a stderr that must stay on its console otherwise.
	switch {
	case e.p.StderrToStdout:
		e.s("StandardError", "stderr", lit("inherit"))
	case e.p.Stdout.File != "" && e.p.Stderr.File == "":
		e.s("StandardError", "stderr.console", lit("journal"))
	}
}

// unmapped warns about the keys systemd has no place for.
func (e *unitWriter) unmapped() {
	p := e.p
	if p.Probes.Startup != nil || p.Probes.Readiness != nil || p.Probes.Liveness != nil {
		e.warn("probes", "systemd has no probes: use sd_notify and WatchdogSec= for liveness")
	}
	if p.Watch != nil {
		e.warn("watch", "restarting on file changes needs a .path unit, not exported")
	}
	if p.Critical {
		e.warn("critical", "systemd stops nothing when one unit ends (consider FailureAction= or OnFailure= by hand)")
	}
	if p.Sidecar {
		e.warn("sidecar", "systemd has no sidecars: the unit stops with the target, not after its dependents ended")
	}
	if !p.Autostart {
		e.warn("autostart", "false: the unit is exported, but %q does not want it", e.opts.Prefix+".target")
	}
	if p.ExitTailLines != config.DefaultExitTailLines {
		e.warn("exit_tail_lines", "not mapped: the lines supervisectl why keeps of a run; systemd keeps the logs its own way")
	}
	if p.Notify == config.NotifyFD && p.NotifyFD != config.DefaultNotifyFD {
		e.warn("notify_fd", "the s6 notification descriptor has no systemd equivalent")
	}
	if p.Rollout != (config.Rollout{}) {
		e.warn("rollout", "systemd has no rolling restart of a template's instances: restart them one by one by hand")
	}
	for _, x := range outputSettings(p) {
		if !x.o.Console && x.o.File == "" {
			e.warn(x.key+".console", "false: the journal gets the output anyway (Standard%s=null by hand to drop it)", strings.TrimPrefix(x.key, "std"))
		}
		if x.o.Timestamps {
			e.warn(x.key+".timestamps", "the journal stamps each line itself; a log file gets no timestamps")
		}
		if x.o.File != "" && x.o.MaxFiles != config.DefaultLogMaxFiles {
			e.warn(x.key+".max_files", "systemd does not rotate %q: keep files with logrotate, or use the journal", x.o.File)
		}
	}
}

func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

func rlimit(v uint64) string {
	if v == config.Unlimited {
		return "infinity"
	}
	return strconv.FormatUint(v, 10)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, " ")
}

func validUnitPart(s string) bool { return s != "" && NamePart(s) == s }

// setting is the text of one directive's value, or, when why is set, the
// config value that cannot be written there so that systemd reads it as
// supervise does, and why.
type setting struct {
	text  string
	value string
	why   string
}

// lit is text the exporter makes itself: keywords, numbers, and its own
// specifiers (%i).
func lit(s string) setting { return setting{text: s} }

// plain is a config value in a setting systemd reads to the end of the
// line without unquoting (paths, user and group names): specifiers are
// expanded there, so % is doubled; and the line itself cannot carry a
// line break or another control byte, leading or trailing blanks (they
// are stripped) or a trailing backslash (it joins the next line), so
// such a value is refused (systemd.syntax(7)).
func plain(s string) setting {
	switch {
	case !utf8.ValidString(s):
		return setting{value: s, why: "is not UTF-8"}
	case strings.ContainsFunc(s, isControl):
		return setting{value: s, why: "holds a line break or another control character, which this setting has no escape for"}
	case s != strings.TrimSpace(s):
		return setting{value: s, why: "starts or ends with a blank, which systemd strips from this setting"}
	case strings.HasSuffix(s, `\`):
		return setting{value: s, why: "ends with a backslash, which joins the next line of a unit file"}
	}
	return setting{text: strings.ReplaceAll(s, "%", "%%")}
}

// word is a plain value as one item of a list systemd splits at blanks
// without unquoting (SupplementaryGroups=, unit names).
func word(s string) setting {
	if strings.ContainsAny(s, " \t\"'\\") {
		return setting{value: s, why: "holds a blank, a quote or a backslash, and systemd splits this list at blanks without unquoting"}
	}
	return plain(s)
}

// display is a value for people (Description=): as it is when plain,
// Go-quoted otherwise, so that none of it is unit file syntax.
func display(s string) setting { return lit(strings.ReplaceAll(displayComment(s), "%", "%%")) }

// displayComment is display for a comment, where specifiers are not
// expanded.
func displayComment(s string) string {
	if q := strconv.Quote(s); q[1:len(q)-1] != s || s != strings.TrimSpace(s) {
		return q
	}
	return s
}

// execWord is one word of a command line. systemd unquotes those with C
// escapes, expands specifiers (% is doubled) and, when it runs the
// command, variables ($ is doubled): every byte but NUL can be written.
func execWord(s string) setting {
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return setting{value: s, why: "holds a NUL byte or is not UTF-8"}
	}
	s = strings.ReplaceAll(s, "%", "%%")
	s = strings.ReplaceAll(s, "$", "$$")
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") && !strings.ContainsFunc(s, isControl) {
		return lit(s)
	}
	return lit(cQuote(s))
}

// assignment is one Environment= assignment, double-quoted with C
// escapes; systemd expands specifiers there but not variables. A name
// systemd would ignore (it takes shell variable names only) is refused.
func assignment(name, value string) setting {
	if !envName(name) {
		return setting{value: name, why: "is no variable name systemd accepts in Environment= (letters, digits and '_', not first a digit)"}
	}
	if !utf8.ValidString(value) || strings.ContainsRune(value, 0) {
		return setting{value: value, why: "holds a NUL byte or is not UTF-8"}
	}
	return lit(cQuote(strings.ReplaceAll(name+"="+value, "%", "%%")))
}

func envName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// cQuote double-quotes s with the C escapes systemd reads: no byte of the
// result is a line break or a quote that ends the word.
func cQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// join is settings one after another with sep between; refused when any
// part is.
func join(sep string, parts ...setting) setting {
	texts := make([]string, len(parts))
	for i, p := range parts {
		if p.why != "" {
			return p
		}
		texts[i] = p.text
	}
	return lit(strings.Join(texts, sep))
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// maxUnitLine is below systemd's limit on a unit file line (LONG_LINE_MAX,
// 1 MiB), past which it refuses the file.
const maxUnitLine = 1<<20 - 1

// directive writes key=value: every line of an exported unit passes here.
// Whatever made the value, the line that leaves is checked to be one line
// of the key systemd reads, or refused with the reason.
func directive(b *strings.Builder, key string, v setting) error {
	if v.why != "" {
		return fmt.Errorf("%q cannot be written to the unit: it %s", v.value, v.why)
	}
	for _, r := range key {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z') {
			return fmt.Errorf("%q is no systemd directive", key)
		}
	}
	if err := plain(v.text); err.why != "" || len(key)+1+len(v.text) > maxUnitLine {
		return fmt.Errorf("%s=%q cannot be written to the unit: it %s", key, v.text, cmp.Or(err.why, "is longer than a unit file line may be"))
	}
	b.WriteString(key)
	b.WriteByte('=')
	b.WriteString(v.text)
	b.WriteByte('\n')
	return nil
}
