package export

import (
	"bufio"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/supervise-dev/supervise/config"
)

// ImportSupervisord translates a supervisord configuration (its INI
// dialect: [program:x] sections, ; comments, indented continuation
// lines) into a supervise.toml, with a warning for every key or section
// that has no equivalent. Only [program:x] sections become programs.
func ImportSupervisord(name string, data []byte) ([]byte, []Warning, error) {
	secs, err := parseINI(data)
	if err != nil {
		return nil, nil, fmt.Errorf("import %s: %w", name, err)
	}
	var ws warnings
	var b strings.Builder
	fmt.Fprintf(&b, "# Imported by supervise from the supervisord configuration %s.\n", name)
	n := 0
	for _, s := range secs {
		prog, ok := strings.CutPrefix(s.name, "program:")
		if !ok {
			switch {
			case s.name == "supervisord", s.name == "supervisorctl", s.name == "unix_http_server", s.name == "inet_http_server",
				strings.HasPrefix(s.name, "rpcinterface:"):
				// supervisord's own settings: supervise has its own.
			default:
				ws.add("", "["+s.name+"]", "not imported: only [program:x] sections have a supervise equivalent")
			}
			continue
		}
		n++
		if err := writeProgram(&b, &ws, prog, s); err != nil {
			return nil, nil, fmt.Errorf("import %s: [%s]: %w", name, s.name, err)
		}
	}
	if n == 0 {
		return nil, nil, fmt.Errorf("import %s: no [program:x] section", name)
	}
	return []byte(b.String()), ws, nil
}

type iniSection struct {
	name string
	keys map[string]string
	line int
}

// parseINI reads supervisord's INI: "[section]", "key = value" or
// "key: value", ";" and "#" comment lines, " ;" inline comments, and
// indented lines continuing the previous value.
func parseINI(data []byte) ([]*iniSection, error) {
	var secs []*iniSection
	var cur *iniSection
	var last string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		raw := sc.Text()
		trim := strings.TrimSpace(raw)
		if trim == "" || trim[0] == ';' || trim[0] == '#' {
			continue
		}
		if raw[0] == ' ' || raw[0] == '\t' {
			if cur == nil || last == "" {
				return nil, fmt.Errorf("line %d: a continuation line outside a value", ln)
			}
			cur.keys[last] += "\n" + stripComment(trim)
			continue
		}
		if trim[0] == '[' {
			end := strings.IndexByte(trim, ']')
			if end < 0 {
				return nil, fmt.Errorf("line %d: unclosed section header", ln)
			}
			cur = &iniSection{name: strings.TrimSpace(trim[1:end]), keys: map[string]string{}, line: ln}
			secs = append(secs, cur)
			last = ""
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("line %d: a key outside any section", ln)
		}
		i := strings.IndexAny(trim, "=:")
		if i < 0 {
			return nil, fmt.Errorf("line %d: want key = value", ln)
		}
		last = strings.ToLower(strings.TrimSpace(trim[:i]))
		cur.keys[last] = stripComment(strings.TrimSpace(trim[i+1:]))
	}
	return secs, sc.Err()
}

func stripComment(v string) string {
	if i := strings.Index(v, " ;"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v)
}

// Compiled on first use: package-level work would cost every start of
// the binary, supervise exec's included.
var (
	envExpansion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`%\(ENV_([A-Za-z_][A-Za-z0-9_]*)\)s`) })
	anyExpansion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`%\([a-z_]+\)[sd0-9]*`) })
)

func writeProgram(b *strings.Builder, ws *warnings, name string, s *iniSection) error {
	warn := func(key, format string, args ...any) { ws.add(name, key, format, args...) }
	tomlName := NamePart(name)
	if tomlName != name {
		warn("name", "renamed to %s: supervise names take letters, digits, '_', '-' and '.'", tomlName)
	}
	k := s.keys
	expand := func(key, v string) string {
		v = strings.ReplaceAll(v, "%(program_name)s", name)
		if key != "environment" && key != "command" && envExpansion().MatchString(v) {
			warn(key, "%%(ENV_x)s becomes ${x}, which supervise expands in env values only: use a shell command to expand it here")
		}
		v = envExpansion().ReplaceAllString(v, "$${$1}")
		if anyExpansion().MatchString(v) {
			warn(key, "%q keeps a supervisord expansion supervise does not know", v)
		}
		return strings.ReplaceAll(v, "%%", "%")
	}
	cmd, ok := k["command"]
	if !ok || cmd == "" {
		return fmt.Errorf("no command")
	}
	fmt.Fprintf(b, "\n[program.%s]\n", tomlName)
	if envExpansion().MatchString(cmd) {
		// supervisord expanded the variable itself; a shell does it here.
		fmt.Fprintf(b, "command = [\"/bin/sh\", \"-c\", %s]\n", tomlQuote("exec "+expand("command", cmd)))
	} else {
		fmt.Fprintf(b, "command = %s\n", tomlQuote(expand("command", cmd)))
	}
	done := map[string]bool{"command": true}
	str := func(key, toml string) {
		if v, ok := k[key]; ok {
			fmt.Fprintf(b, "%s = %s\n", toml, tomlQuote(expand(key, v)))
			done[key] = true
		}
	}
	str("directory", "dir")
	str("user", "user")
	if v, ok := k["numprocs"]; ok {
		done["numprocs"] = true
		if n, err := strconv.Atoi(v); err == nil && n > 1 {
			fmt.Fprintf(b, "instances = %d\n", n)
			if _, ok := k["process_name"]; ok {
				warn("process_name", "instances are named %s:0 … %s:%d in supervise", tomlName, tomlName, n-1)
				done["process_name"] = true
			}
		}
	}
	if v, ok := k["autostart"]; ok {
		done["autostart"] = true
		fmt.Fprintf(b, "autostart = %v\n", truthy(v))
	}
	restart := `"on-failure"` // supervisord's default: unexpected
	if v, ok := k["autorestart"]; ok {
		done["autorestart"] = true
		switch strings.ToLower(v) {
		case "true":
			restart = `"always"`
		case "false":
			restart = `"never"`
		}
	}
	fmt.Fprintf(b, "restart = %s\n", restart)
	if v, ok := k["exitcodes"]; ok {
		done["exitcodes"] = true
		var codes []string
		for _, c := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(c)); err == nil {
				codes = append(codes, strconv.Itoa(n))
			}
		}
		fmt.Fprintf(b, "success_exit_codes = [%s]\n", strings.Join(codes, ", "))
	}
	if v, ok := k["stopsignal"]; ok {
		done["stopsignal"] = true
		fmt.Fprintf(b, "stop_signal = %s\n", tomlQuote(strings.ToUpper(v)))
	}
	if v, ok := k["stopwaitsecs"]; ok {
		done["stopwaitsecs"] = true
		fmt.Fprintf(b, "stop_timeout = %s\n", tomlQuote(v+"s"))
	}
	if v, ok := k["umask"]; ok {
		done["umask"] = true
		fmt.Fprintf(b, "sandbox = { umask = %s }\n", tomlQuote(v))
	}
	if v, ok := k["environment"]; ok {
		done["environment"] = true
		env, err := parseSupervisordEnv(v)
		if err != nil {
			warn("environment", "%v: not imported", err)
		} else {
			var parts []string
			for _, key := range sortedKeys(env) {
				parts = append(parts, tomlKey(key)+" = "+tomlQuote(expand("environment", env[key])))
			}
			fmt.Fprintf(b, "env = { %s }\n", strings.Join(parts, ", "))
		}
	}
	logFile := func(stream string) string {
		key := stream + "_logfile"
		v, ok := k[key]
		done[key] = true
		switch {
		case !ok || strings.EqualFold(v, "AUTO"):
			if ok {
				warn(key, "AUTO (a file supervisord names) becomes supervise's console and ring; set a file to keep one")
			}
			return ""
		case strings.EqualFold(v, "NONE"):
			return ""
		}
		return expand(key, v)
	}
	out, errf := logFile("stdout"), logFile("stderr")
	if truthy(k["redirect_stderr"]) {
		done["redirect_stderr"] = true
		errf = out // both streams into one file, as supervisord's redirect
	}
	for _, x := range []struct{ stream, file string }{{"stdout", out}, {"stderr", errf}} {
		if x.file == "" {
			continue
		}
		o := "file = " + tomlQuote(x.file)
		if v, ok := k[x.stream+"_logfile_maxbytes"]; ok {
			done[x.stream+"_logfile_maxbytes"] = true
			o += ", max_size = " + tomlQuote(supervisordSize(v))
		}
		if v, ok := k[x.stream+"_logfile_backups"]; ok {
			done[x.stream+"_logfile_backups"] = true
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				o += fmt.Sprintf(", max_files = %d", n)
			}
		}
		fmt.Fprintf(b, "%s = { %s }\n", x.stream, o)
	}
	why := map[string]string{
		"startsecs":    "supervise counts every exit as a crash for its backoff; a run longer than reset_after (10m) forgives past crashes",
		"startretries": "supervise retries forever, waiting by the kubelet's crash backoff (10s doubling to 5m)",
		"priority":     "order programs with depends_on",
		"stopasgroup":  "supervise always signals the program's process group",
		"killasgroup":  "supervise always kills the whole sandbox (its cgroup)",
		"serverurl":    "supervisorctl's setting",
	}
	var rest []string
	for key := range k {
		if !done[key] {
			rest = append(rest, key)
		}
	}
	sort.Strings(rest)
	for _, key := range rest {
		if w, ok := why[key]; ok {
			warn(key, "not imported: %s", w)
		} else if !strings.HasSuffix(key, "_logfile_maxbytes") && !strings.HasSuffix(key, "_logfile_backups") {
			warn(key, "not imported: no supervise equivalent")
		}
	}
	return nil
}

// parseSupervisordEnv reads environment=A="1",B=two: comma-separated
// KEY=VALUE pairs, values optionally quoted.
func parseSupervisordEnv(s string) (map[string]string, error) {
	env := map[string]string{}
	s = strings.ReplaceAll(s, "\n", "")
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, fmt.Errorf("environment: want KEY=VALUE at %q", s)
		}
		key := strings.TrimSpace(s[:eq])
		s = strings.TrimLeft(s[eq+1:], " ")
		var val string
		if len(s) > 0 && (s[0] == '"' || s[0] == '\'') {
			end := strings.IndexByte(s[1:], s[0])
			if end < 0 {
				return nil, fmt.Errorf("environment: unclosed quote in %s", key)
			}
			val, s = s[1:1+end], s[end+2:]
		} else {
			end := strings.IndexByte(s, ',')
			if end < 0 {
				end = len(s)
			}
			val, s = strings.TrimSpace(s[:end]), s[end:]
		}
		env[key] = val
		s = strings.TrimLeft(strings.TrimPrefix(strings.TrimLeft(s, " "), ","), " ")
	}
	return env, nil
}

// supervisordSize turns "50MB" (supervisord's 1024-based units) into
// supervise's "50MiB".
func supervisordSize(v string) string {
	u := strings.ToUpper(strings.TrimSpace(v))
	for _, x := range []struct{ in, out string }{{"GB", "GiB"}, {"MB", "MiB"}, {"KB", "KiB"}} {
		if n, ok := strings.CutSuffix(u, x.in); ok {
			return strings.TrimSpace(n) + x.out
		}
	}
	return u
}

func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "yes", "on", "1":
		return true
	}
	return false
}

// tomlQuote writes a TOML basic string.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlKey writes a bare key, or a quoted one when it needs quotes.
func tomlKey(k string) string {
	bare := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
	}
	if k != "" && strings.IndexFunc(k, func(r rune) bool { return !bare(r) }) < 0 {
		return k
	}
	return tomlQuote(k)
}

// ImportProcfile writes cfg, a loaded Procfile (its .env and PORTs
// applied), as a supervise.toml for a box: each process type a program
// restarted always, rather than the dev runner's set that stops when one
// process ends.
func ImportProcfile(cfg *config.Config) ([]byte, []Warning) {
	var ws warnings
	var b strings.Builder
	fmt.Fprintf(&b, "# Imported by supervise from %s (with its .env).\n", filepath.Base(cfg.File))
	for _, p := range cfg.Programs {
		fmt.Fprintf(&b, "\n[program.%s]\n", p.Name)
		cmd := make([]string, len(p.Command))
		for i, a := range p.Command {
			cmd[i] = tomlQuote(a)
		}
		fmt.Fprintf(&b, "command = [%s]\nrestart = \"always\"\n", strings.Join(cmd, ", "))
		if p.Instances > 1 {
			fmt.Fprintf(&b, "instances = %d\n", p.Instances)
		}
		var parts []string
		for _, k := range sortedKeys(p.Env) {
			// $ is literal in a .env value once read; the TOML env
			// expands ${…}, so it is doubled.
			parts = append(parts, tomlKey(k)+" = "+tomlQuote(strings.ReplaceAll(p.Env[k], "$", "$$")))
		}
		if len(parts) > 0 {
			fmt.Fprintf(&b, "env = { %s }\n", strings.Join(parts, ", "))
		}
		if p.Port != 0 && p.Instances > 1 {
			ws.add(p.Name, "PORT", "each instance's PORT (%d + instance) is the dev runner's; set PORT per instance in the command if the program needs it", p.Port)
		}
	}
	ws.add("", "Procfile", `the dev runner stops every process when one ends; the imported programs are restarted always (add [supervisor] exit_on for the dev behaviour)`)
	return []byte(b.String()), ws
}
