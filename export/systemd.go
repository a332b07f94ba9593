package export

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

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
	byName := map[string]*config.Program{}
	for _, p := range cfg.Programs {
		byName[p.Name] = p
	}
	var files []File
	var wants []string
	for _, p := range cfg.Programs {
		e := &unitWriter{opts: opts, ws: &ws, p: p, byName: byName}
		data, err := e.service()
		if err != nil {
			return nil, nil, err
		}
		files = append(files, File{Name: unitFile(opts.Prefix, p), Data: data})
		if p.Autostart {
			wants = append(wants, instanceUnits(opts.Prefix, p)...)
		}
	}
	var t strings.Builder
	fmt.Fprintf(&t, "# Exported by supervise from %s.\n[Unit]\nDescription=%s: the programs of %s\n", cfg.File, opts.Prefix, specifierSafe(cfg.File))
	if len(wants) > 0 {
		fmt.Fprintf(&t, "Wants=%s\n", strings.Join(wants, " "))
	}
	t.WriteString("\n[Install]\nWantedBy=multi-user.target\n")
	files = append(files, File{Name: opts.Prefix + ".target", Data: []byte(t.String())})
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
	opts   SystemdOptions
	ws     *warnings
	p      *config.Program
	byName map[string]*config.Program
	unit   strings.Builder
	svc    strings.Builder
}

func (e *unitWriter) warn(key, format string, args ...any) { e.ws.add(e.p.Name, key, format, args...) }

func (e *unitWriter) u(k, v string) { fmt.Fprintf(&e.unit, "%s=%s\n", k, v) }
func (e *unitWriter) s(k, v string) { fmt.Fprintf(&e.svc, "%s=%s\n", k, v) }

func (e *unitWriter) service() ([]byte, error) {
	p := e.p
	e.u("Description", fmt.Sprintf("%s: %s", e.opts.Prefix, p.Name)+instanceSuffix(p))
	e.u("PartOf", e.opts.Prefix+".target")
	e.deps()

	switch p.Notify {
	case config.NotifySdNotify:
		e.s("Type", "notify")
		if p.Watchdog > 0 {
			e.s("WatchdogSec", seconds(p.Watchdog))
		}
	case config.NotifyFD:
		e.s("Type", "exec")
		e.warn("notify", `"fd" (the s6 notification descriptor) has no systemd equivalent: the unit is up once exec succeeds (Type=exec); use sd_notify for Type=notify`)
	default:
		e.s("Type", "exec")
	}
	if p.ReadyLogLine != "" {
		e.warn("ready_log_line", "systemd cannot watch output for readiness: the unit is up once exec succeeds")
	}
	argv, err := e.command(p.Command, "command")
	if err != nil {
		return nil, err
	}
	e.s("ExecStart", argv)
	if p.Dir != "" {
		e.s("WorkingDirectory", specifierSafe(p.Dir))
	}
	e.env()
	if p.User != "" {
		e.s("User", p.User)
	}
	if p.Group != "" {
		e.s("Group", p.Group)
	}
	if len(p.Groups) > 0 {
		e.s("SupplementaryGroups", strings.Join(p.Groups, " "))
	}
	e.restart()
	e.stop()
	e.hooks()
	e.sandbox()
	e.outputs()
	e.unmapped()

	var b strings.Builder
	fmt.Fprintf(&b, "# Exported by supervise from program %s (line %d).\n[Unit]\n%s\n[Service]\n%s", p.Name, p.Line, e.unit.String(), e.svc.String())
	return []byte(b.String()), nil
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
	var after, wants, binds []string
	for _, d := range e.p.DependsOn {
		dp := e.byName[d]
		if dp == nil {
			continue
		}
		units := instanceUnits(e.opts.Prefix, dp)
		after = append(after, units...)
		if e.p.RestartWith(d) {
			binds = append(binds, units...)
		} else {
			wants = append(wants, units...)
		}
		switch e.p.DependsOnCondition(d) {
		case config.DependReady:
			if dp.Notify != config.NotifySdNotify && dp.HasReadinessCheck() {
				e.warn("depends_on."+d, "waits for %s to be ready, but systemd knows readiness only through sd_notify: the order is by start", d)
			}
		case config.DependCompleted:
			e.warn("depends_on."+d, "waits for %s to complete: make %s Type=oneshot by hand for systemd to wait for its end", d, d)
		}
	}
	if len(after) > 0 {
		e.u("After", strings.Join(after, " "))
	}
	if len(wants) > 0 {
		e.u("Wants", strings.Join(wants, " "))
	}
	if len(binds) > 0 {
		e.u("BindsTo", strings.Join(binds, " "))
	}
}

// command quotes argv for ExecStart=, its program resolved to an
// absolute path now, as systemd wants one.
func (e *unitWriter) command(argv []string, key string) (string, error) {
	if len(argv) == 0 {
		return "", fmt.Errorf("export systemd: program %s: %s is empty", e.p.Name, key)
	}
	path := argv[0]
	if !filepath.IsAbs(path) {
		env := []string{"PATH=" + os.Getenv("PATH")}
		if v, ok := e.p.Env["PATH"]; ok {
			env = []string{"PATH=" + v}
		}
		found, err := execpath.Look(path, env, e.p.Dir)
		if err != nil {
			e.warn(key, "%q is not found on this machine's PATH: written as it is (systemd searches its own fixed PATH)", path)
		} else {
			path = found
		}
	}
	out := []string{quoteExec(path)}
	for _, a := range argv[1:] {
		out = append(out, quoteExec(a))
	}
	return strings.Join(out, " "), nil
}

func (e *unitWriter) env() {
	p := e.p
	if len(p.EnvFiles) > 0 {
		e.warn("env_file", "inlined as Environment=: supervise expands ${VAR} in env files, systemd's EnvironmentFile= does not")
	}
	for _, k := range sortedKeys(p.Env) {
		e.s("Environment", quoteAssignment(k+"="+p.Env[k]))
	}
	e.s("Environment", quoteAssignment("SUPERVISE_PROGRAM="+p.Name))
	if p.Instances > 1 {
		e.s("Environment", "SUPERVISE_INSTANCE=%i")
	} else {
		e.s("Environment", "SUPERVISE_INSTANCE=0")
	}
	if p.Port != 0 && p.Instances > 1 {
		e.warn("PORT", "each instance's PORT (%d + instance) cannot be computed by a template: set it per instance with a drop-in", p.Port)
	} else if p.Port != 0 {
		e.s("Environment", "PORT="+strconv.Itoa(p.Port))
	}
}

func (e *unitWriter) restart() {
	p := e.p
	switch p.Restart {
	case config.RestartAlways:
		e.s("Restart", "always")
	case config.RestartOnFailure:
		e.s("Restart", "on-failure")
	default:
		e.s("Restart", "no")
	}
	if codes := slices.DeleteFunc(slices.Clone(p.SuccessExitCodes), func(c int) bool { return c == 0 }); len(codes) > 0 {
		e.s("SuccessExitStatus", joinInts(codes))
	}
	for i, r := range p.RestartRules {
		key := fmt.Sprintf("restart_rules[%d]", i)
		if r.Operator == config.RuleIn {
			e.s("RestartForceExitStatus", joinInts(r.Values))
		} else {
			e.warn(key, "a NotIn rule has no systemd equivalent (RestartForceExitStatus= lists codes, not their complement)")
		}
	}
	b := p.Backoff
	e.s("RestartSec", seconds(b.Initial))
	if e.opts.Version >= 254 && b.Max > b.Initial && b.Initial > 0 {
		steps := int(math.Ceil(math.Log2(float64(b.Max) / float64(b.Initial))))
		e.s("RestartSteps", strconv.Itoa(steps))
		e.s("RestartMaxDelaySec", seconds(b.Max))
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
		e.s("KillSignal", "SIG"+unixsig.Name(p.StopSignal))
	}
	if p.StopTimeout > 0 {
		e.s("TimeoutStopSec", seconds(p.StopTimeout))
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
		argv, err := e.command(x.hook.Command, x.key)
		if err != nil {
			e.warn(x.key, "%v", err)
			continue
		}
		if x.directive == "ExecStopPost" {
			argv = "-" + argv // post_stop's failure is only logged
		}
		e.s(x.directive, argv)
		if x.hook.Timeout != config.DefaultHookTimeout {
			e.warn(x.key+".timeout", "systemd bounds hooks by TimeoutStartSec= and TimeoutStopSec=, not one by one")
		}
	}
}

func (e *unitWriter) sandbox() {
	sb := e.p.Sandbox
	if sb.MemoryMax > 0 {
		e.s("MemoryMax", strconv.FormatInt(sb.MemoryMax, 10))
	}
	if sb.CPUMax > 0 {
		e.s("CPUQuota", strconv.FormatFloat(sb.CPUMax*100, 'f', -1, 64)+"%")
	}
	if sb.PidsMax > 0 {
		e.s("TasksMax", strconv.FormatInt(sb.PidsMax, 10))
	}
	for _, ns := range sb.Namespaces {
		switch ns {
		case "net":
			e.s("PrivateNetwork", "yes")
		case "ipc":
			e.s("PrivateIPC", "yes")
		case "uts":
			e.s("ProtectHostname", "yes")
		case "mount":
			e.s("PrivateTmp", "yes")
			e.warn("sandbox.namespaces", "mount becomes PrivateTmp=yes (a mount namespace with a private /tmp): systemd has no bare mount namespace")
		case "user":
			e.s("PrivateUsers", "yes")
		case "pid":
			e.warn("sandbox.namespaces", "pid has no systemd equivalent before PrivatePIDs= (systemd 257)")
		}
	}
	if sb.Hostname != "" {
		e.warn("sandbox.hostname", "systemd sets no hostname per unit (ProtectHostname= only keeps the host's)")
	}
	if sb.NoNewPrivileges {
		e.s("NoNewPrivileges", "yes")
	}
	if sb.Umask >= 0 {
		e.s("UMask", fmt.Sprintf("%04o", sb.Umask))
	}
	for _, name := range sortedKeys(sb.Rlimits) {
		l := sb.Rlimits[name]
		e.s("Limit"+strings.ToUpper(name), rlimit(l.Soft)+":"+rlimit(l.Hard))
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
		e.s(x.directive, "append:"+specifierSafe(x.o.File))
		e.warn(x.key+".max_size", "systemd does not rotate %s: rotate it with logrotate, or use the journal", x.o.File)
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
		e.warn("autostart", "false: the unit is exported, but %s.target does not want it", e.opts.Prefix)
	}
}

// quoteExec quotes one ExecStart= word: specifiers (%) and variable
// expansion ($) are escaped, so the word reaches the program as it is.
func quoteExec(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	s = strings.ReplaceAll(s, "$", "$$")
	if s != "" && !strings.ContainsAny(s, " \t\n\"'\\;") {
		return s
	}
	return `"` + escapeC(s) + `"`
}

// quoteAssignment quotes one Environment= assignment.
func quoteAssignment(s string) string {
	return `"` + escapeC(strings.ReplaceAll(s, "%", "%%")) + `"`
}

// escapeC escapes what a double-quoted systemd string would read as an
// escape or its end.
func escapeC(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return r.Replace(s)
}

// specifierSafe escapes % in a path-like setting.
func specifierSafe(s string) string { return strings.ReplaceAll(s, "%", "%%") }

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
