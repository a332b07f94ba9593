package export

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/supervise-dev/supervise/config"
)

// The importer takes what supervise itself would load and no more: its
// input and the TOML it writes are bounded as a config file is, and each
// pass over the text is linear, so a hostile supervisord.conf costs a few
// times 1 MiB and well under a second.
const (
	maxImportSize     = 1 << 20 // bytes read, and bytes written
	maxImportPrograms = 20000   // one [program.x] header each: the config's table bound
	maxFormatWidth    = 1024    // the width or precision of a %(name)…s
)

var errTooLarge = fmt.Errorf("larger than %d bytes (1 MiB), the most supervise reads of a config", maxImportSize)

// ImportSupervisordFile reads path and imports it. Only a regular file of
// at most 1 MiB is read: a FIFO, a device or a directory is refused at
// once, never waited on nor read to its end.
func ImportSupervisordFile(path string) ([]byte, []Warning, error) {
	data, err := readImportFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("import %s: %w", path, err)
	}
	return ImportSupervisord(path, data)
}

func readImportFile(path string) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO that nobody writes would block for ever.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if m := st.Mode(); !m.IsRegular() {
		return nil, fmt.Errorf("not a regular file but %s", fileKind(m))
	}
	if st.Size() > maxImportSize {
		return nil, errTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, maxImportSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxImportSize {
		return nil, errTooLarge // it grew while read
	}
	return data, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "an unusual file"
}

// ImportSupervisord translates a supervisord configuration into a
// supervise.toml, with a warning for every key or section that has no
// equivalent. Only [program:x] sections become programs. It reads the
// file as supervisord does: Python's configparser (see parseINI), every
// value "%"-expanded (see pyFormat), command= split by Python's shlex in
// POSIX mode (shlexSplit) and environment= by its lexer (envPairs). The
// command is written as argv words: nothing of it ever reaches a shell.
func ImportSupervisord(name string, data []byte) ([]byte, []Warning, error) {
	if len(data) > maxImportSize {
		return nil, nil, fmt.Errorf("import %s: %w", name, errTooLarge)
	}
	ini, err := parseINI(name, data)
	if err != nil {
		return nil, nil, fmt.Errorf("import: %w", err)
	}
	here := name
	if abs, err := filepath.Abs(name); err == nil {
		here = abs
	}
	groups := map[string]string{} // program → its [group:x]
	for _, s := range ini.sections {
		if g, ok := strings.CutPrefix(s.name, "group:"); ok {
			for _, p := range strings.Split(s.keys["programs"], ",") {
				groups[strings.TrimSpace(p)] = strings.TrimSpace(g)
			}
		}
	}
	var ws warnings
	var b strings.Builder
	// %q: a file name may hold a newline, which would end the comment.
	fmt.Fprintf(&b, "# Imported by supervise from the supervisord configuration %q.\n", name)
	used := map[string]bool{}
	n, seen := 0, 0
	for _, s := range ini.sections {
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
		seen++
		prog = strings.TrimSpace(prog) // as supervisord does
		tomlName := NamePart(prog)
		switch {
		case !programNameRE().MatchString(tomlName):
			ws.add(prog, "name", "not imported: %q cannot name a supervise program (1-63 letters, digits, '_', '-' or '.', starting with a letter or digit)", prog)
			continue
		case used[tomlName]:
			ws.add(prog, "name", "not imported: a program before it is already named %s", tomlName)
			continue
		case tomlName != prog:
			ws.add(prog, "name", "renamed to %s: supervise names take letters, digits, '_', '-' and '.'", tomlName)
		}
		used[tomlName] = true
		if n++; n > maxImportPrograms {
			return nil, nil, fmt.Errorf("import %s: more than %d programs, the most a supervise config holds", name, maxImportPrograms)
		}
		for _, k := range defaultKeys {
			// [DEFAULT] is under every section, as in configparser
			if v, ok := ini.defaults[k]; ok {
				if _, ok := s.keys[k]; !ok {
					s.keys[k] = v
				}
			}
		}
		group := groups[prog]
		if group == "" {
			group = prog
		}
		p := &supervisordProgram{name: prog, tomlName: tomlName, group: group, here: filepath.Dir(here), keys: s.keys, ws: &ws}
		if err := p.write(&b); err != nil {
			return nil, nil, fmt.Errorf("import %s:%d: program %q: %w", name, s.line, prog, err)
		}
		if b.Len() > maxImportSize {
			return nil, nil, fmt.Errorf("import %s: the supervise.toml written would be %w", name, errTooLarge)
		}
	}
	for _, k := range sortedKeys(ini.defaults) {
		if !slices.Contains(defaultKeys, k) {
			ws.add("", "[DEFAULT] "+k, "not imported: no supervise equivalent")
		}
	}
	switch {
	case seen == 0:
		return nil, nil, fmt.Errorf("import %s: no [program:x] section", name)
	case n == 0:
		return nil, nil, fmt.Errorf("import %s: no [program:x] section with a name supervise can take", name)
	}
	return []byte(b.String()), ws, nil
}

// defaultKeys are the keys a [DEFAULT] section may give every program:
// those the importer maps. Copying only these keeps the cost linear
// however many programs and defaults a file has.
var defaultKeys = []string{"command", "directory", "user", "numprocs", "numprocs_start", "autostart", "autorestart",
	"exitcodes", "stopsignal", "stopwaitsecs", "umask", "environment", "redirect_stderr",
	"stdout_logfile", "stdout_logfile_maxbytes", "stdout_logfile_backups",
	"stderr_logfile", "stderr_logfile_maxbytes", "stderr_logfile_backups"}

// programNameRE is what config accepts as a program name.
var programNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`) })

type iniSection struct {
	name string
	line int
	keys map[string]string
}

type iniFile struct {
	sections []*iniSection
	defaults map[string]string // [DEFAULT]
}

// parseINI reads supervisord's INI as Python's configparser does with
// supervisord's settings: "[section]" (a repeated one continues the
// first), "key = value" or "key: value" (the key lower-cased, a repeated
// one replacing the first), full-line comments starting with ; or #,
// inline ones where ; or # follows a blank, and lines indented deeper
// than their key continuing its value (joined by newlines). Each value is
// kept as a list of lines and joined once at the end: linear in the input.
func parseINI(file string, data []byte) (*iniFile, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s:%d: not UTF-8 text", file, lineOf(data, firstInvalidUTF8(data)))
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		// NUL cannot reach an argv or environment; refs use it (refMark).
		return nil, fmt.Errorf("%s:%d: a NUL byte", file, lineOf(data, i))
	}
	text := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n")
	f := &iniFile{}
	lines := map[string][]string{} // of [DEFAULT]
	byName := map[string]*iniSection{}
	values := map[*iniSection]map[string][]string{}
	var cur map[string][]string // the section being read, nil before the first
	opt, indent := "", 0
	for ln, rest := 1, text; rest != ""; ln++ {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		at := inlineComment(line)
		if t := strings.TrimSpace(line); strings.HasPrefix(t, ";") || strings.HasPrefix(t, "#") {
			at = 0
		}
		value := line
		if at >= 0 {
			value = line[:at]
		}
		value = strings.TrimSpace(value)
		if value == "" {
			if at < 0 && cur != nil && opt != "" {
				cur[opt] = append(cur[opt], "") // a blank line inside a value
			}
			continue
		}
		ind := len(line) - len(strings.TrimLeft(line, " \t\f\v"))
		if cur != nil && opt != "" && ind > indent {
			cur[opt] = append(cur[opt], value)
			continue
		}
		indent = ind
		if value[0] == '[' {
			end := strings.LastIndexByte(value, ']')
			if end < 0 {
				return nil, fmt.Errorf("%s:%d: unclosed section header", file, ln)
			}
			if end == 1 {
				return nil, fmt.Errorf("%s:%d: a section header with no name", file, ln)
			}
			name := value[1:end]
			switch s := byName[name]; {
			case name == "DEFAULT":
				cur = lines
			case s != nil:
				cur = values[s]
			default:
				s = &iniSection{name: name, line: ln}
				byName[name] = s
				f.sections = append(f.sections, s)
				cur = map[string][]string{}
				values[s] = cur
			}
			opt = ""
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("%s:%d: a key outside any section", file, ln)
		}
		i := strings.IndexAny(value, "=:")
		if i < 0 {
			return nil, fmt.Errorf("%s:%d: want key = value", file, ln)
		}
		opt = strings.ToLower(strings.TrimSpace(value[:i]))
		if opt == "" {
			return nil, fmt.Errorf("%s:%d: a value with no key", file, ln)
		}
		cur[opt] = []string{strings.TrimSpace(value[i+1:])}
	}
	join := func(m map[string][]string) map[string]string {
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = strings.TrimRightFunc(strings.Join(v, "\n"), unicode.IsSpace)
		}
		return out
	}
	f.defaults = join(lines)
	for _, s := range f.sections {
		s.keys = join(values[s])
	}
	return f, nil
}

// inlineComment returns where a ; or # that follows a blank starts, or -1.
func inlineComment(line string) int {
	for i := 0; i < len(line); i++ {
		if (line[i] == ';' || line[i] == '#') && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			return i
		}
	}
	return -1
}

func firstInvalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(data)
}

func lineOf(data []byte, i int) int { return 1 + bytes.Count(data[:i], []byte("\n")) }

// supervisordProgram is one [program:x] being written.
type supervisordProgram struct {
	name, tomlName, group, here string
	keys                        map[string]string
	ws                          *warnings
	numprocs, start             int
	env                         map[string]string // environment=, refMark-bracketed refs kept
	warned                      map[string]bool   // "key name": an expansion warned about
}

func (p *supervisordProgram) warn(key, format string, args ...any) {
	p.ws.add(p.name, key, format, args...)
}

// envRef is a %(ENV_X)s of an environment= value, left for supervise to
// expand as ${X} when it loads the config, as supervisord did at start.
type envRef string

// keepSpec is an expansion written back as it stands. In environment=
// it is bracketed by refMark, hex-encoded ("+" + hex), so that the lexer
// that follows does not read its parentheses as tokens.
type keepSpec struct{ marked bool }

// refMark brackets an envRef's name inside a value until it is written:
// parseINI refuses NUL, so no byte of the file is ever taken for one.
const refMark = "\x00"

// expand does to value what supervisord does before using it: Python's
// "value % expansions". In environment= (envRefs), a plain %(ENV_X)s stays
// a reference for supervise to resolve; anywhere else it is resolved here,
// from the program's environment= or else the importer's own environment,
// and the output keeps that value (with a warning): it is never handed to
// a shell to expand later.
func (p *supervisordProgram) expand(key, value string, envRefs bool) (string, error) {
	return pyFormat(value, func(name string, plain bool) (any, error) {
		switch name {
		case "here":
			return p.here, nil
		case "program_name":
			return p.name, nil
		case "group_name":
			return p.group, nil
		case "host_node_name":
			h, err := os.Hostname()
			if err != nil {
				return nil, fmt.Errorf("%s: %%(host_node_name)s: %w", key, err)
			}
			p.warnOnce(key, name, "%%(host_node_name)s is this machine's name (%q), fixed at import", h)
			return h, nil
		case "numprocs":
			return p.numprocs, nil
		case "process_num":
			if p.numprocs <= 1 {
				return p.start, nil
			}
			p.warnOnce(key, name, "%%(process_num) differs per instance and is kept as written: supervise gives each instance its number in $SUPERVISE_INSTANCE")
			return keepSpec{marked: envRefs}, nil
		}
		x, ok := strings.CutPrefix(name, "ENV_")
		if !ok {
			return nil, fmt.Errorf("%s: %%(%s): supervisord has no such expansion and would refuse it", key, name)
		}
		if envRefs {
			if plain && envNameRE().MatchString(x) {
				return envRef(x), nil
			}
		} else if v, ok := p.env[x]; ok {
			return p.resolveRefs(key, v)
		}
		return p.lookupEnv(key, x)
	})
}

var envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// lookupEnv is ENV_x from the importer's environment, fixed in the output.
func (p *supervisordProgram) lookupEnv(key, x string) (string, error) {
	v, ok := os.LookupEnv(x)
	if !ok {
		return "", fmt.Errorf("%s: %%(ENV_%s)s: %s is not set here, and supervisord would refuse it unset: set it and import again", key, x, x)
	}
	p.warnOnce(key, "ENV_"+x, "%%(ENV_%s)s is expanded at import from the importer's environment: the output keeps that value, where supervisord read it at each start", x)
	return v, nil
}

// warnOnce warns about an expansion of key once, however often it occurs.
func (p *supervisordProgram) warnOnce(key, name, format string, args ...any) {
	if !p.warned[key+" "+name] {
		p.warned[key+" "+name] = true
		p.warn(key, format, args...)
	}
}

// resolveRefs replaces the refs of an environment= value with their values
// here, for a key that supervise does not expand.
func (p *supervisordProgram) resolveRefs(key, v string) (string, error) {
	if !strings.Contains(v, refMark) {
		return v, nil
	}
	parts := strings.Split(v, refMark)
	n := 0
	for i := range parts {
		if i%2 == 1 {
			if spec, ok := keptSpec(parts[i]); ok {
				parts[i] = spec
			} else {
				val, err := p.lookupEnv(key, parts[i])
				if err != nil {
					return "", err
				}
				parts[i] = val
			}
		}
		if n += len(parts[i]); n > maxImportSize {
			return "", fmt.Errorf("%s: expands to %w", key, errTooLarge)
		}
	}
	return strings.Join(parts, ""), nil
}

// keptSpec decodes a bracketed keepSpec.
func keptSpec(part string) (string, bool) {
	h, ok := strings.CutPrefix(part, "+")
	if !ok {
		return "", false
	}
	spec, err := hex.DecodeString(h)
	return string(spec), err == nil
}

// tomlEnvValue writes an environment= value for supervise's env, which
// expands ${…} and $$: refs become ${X}, every other $ is doubled.
func tomlEnvValue(v string) string {
	parts := strings.Split(v, refMark)
	for i := range parts {
		if spec, ok := keptSpec(parts[i]); ok && i%2 == 1 {
			parts[i] = spec
		} else if i%2 == 1 {
			parts[i] = "${" + parts[i] + "}"
		} else {
			parts[i] = strings.ReplaceAll(parts[i], "$", "$$")
		}
	}
	return tomlQuote(strings.Join(parts, ""))
}

func (p *supervisordProgram) write(b *strings.Builder) error {
	k := p.keys
	done := map[string]bool{"command": true}
	p.warned = map[string]bool{}
	p.numprocs = 1
	for _, x := range []struct {
		key string
		to  *int
	}{{"numprocs", &p.numprocs}, {"numprocs_start", &p.start}} {
		if v, ok := k[x.key]; ok {
			done[x.key] = true
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				return fmt.Errorf("%s: %q is not a count", x.key, v)
			}
			*x.to = n
		}
	}
	if p.numprocs > 1 {
		if _, ok := k["process_name"]; ok {
			p.warn("process_name", "instances are named %s:0 … %s:%d in supervise", p.tomlName, p.tomlName, p.numprocs-1)
			done["process_name"] = true
		}
	}
	p.env = map[string]string{}
	if v, ok := k["environment"]; ok {
		done["environment"] = true
		v, err := p.expand("environment", v, true)
		if err != nil {
			return err
		}
		if p.env, err = envPairs(v); err != nil {
			return fmt.Errorf("environment: %w", err)
		}
		for key := range p.env {
			if strings.Contains(key, refMark) {
				return fmt.Errorf("environment: %%(ENV_x)s in a variable's name: write the name")
			}
		}
	}
	cmd, ok := k["command"]
	if !ok || cmd == "" {
		return fmt.Errorf("no command")
	}
	cmd, err := p.expand("command", cmd, false)
	if err != nil {
		return err
	}
	argv, err := shlexSplit(cmd)
	if err != nil {
		return fmt.Errorf("command: %w", err)
	}
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Errorf("command: no program to run")
	}
	fmt.Fprintf(b, "\n[program.%s]\n", tomlKey(p.tomlName))
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = tomlQuote(a)
	}
	// An array: supervise runs exactly these words, as supervisord did.
	fmt.Fprintf(b, "command = [%s]\n", strings.Join(words, ", "))
	str := func(key, toml string) error {
		v, ok := k[key]
		if !ok {
			return nil
		}
		done[key] = true
		v, err := p.expand(key, v, false)
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "%s = %s\n", toml, tomlQuote(v))
		return nil
	}
	if err := str("directory", "dir"); err != nil {
		return err
	}
	if err := str("user", "user"); err != nil {
		return err
	}
	if p.numprocs > 1 {
		fmt.Fprintf(b, "instances = %d\n", p.numprocs)
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
			if n, err := strconv.Atoi(strings.TrimSpace(c)); err == nil && n >= 0 && n <= 255 {
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
	if len(p.env) > 0 {
		var parts []string
		for _, key := range sortedKeys(p.env) {
			parts = append(parts, tomlKey(key)+" = "+tomlEnvValue(p.env[key]))
		}
		fmt.Fprintf(b, "env = { %s }\n", strings.Join(parts, ", "))
	}
	logFile := func(stream string) (string, error) {
		key := stream + "_logfile"
		v, ok := k[key]
		done[key] = true
		switch {
		case !ok || strings.EqualFold(v, "AUTO"):
			if ok {
				p.warn(key, "AUTO (a file supervisord names) becomes supervise's console and ring; set a file to keep one")
			}
			return "", nil
		case strings.EqualFold(v, "NONE"):
			return "", nil
		case v == "/dev/stdout" || v == "/dev/stderr" || v == "/dev/fd/1" || v == "/dev/fd/2":
			// a container's way to reach its console: supervise's own
			return "", nil
		}
		return p.expand(key, v, false)
	}
	out, err := logFile("stdout")
	if err != nil {
		return err
	}
	errf, err := logFile("stderr")
	if err != nil {
		return err
	}
	if truthy(k["redirect_stderr"]) {
		done["redirect_stderr"] = true
		errf = out // both streams into one file, as supervisord's redirect
	}
	for _, x := range []struct{ stream, file string }{{"stdout", out}, {"stderr", errf}} {
		if x.file == "" {
			continue
		}
		o := "file = " + tomlQuote(x.file)
		if v, ok := k[x.stream+"_logfile_maxbytes"]; ok && strings.TrimSpace(v) != "0" {
			// 0 is supervisord's "never rotate"
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
			p.warn(key, "not imported: %s", w)
		} else if !strings.HasSuffix(key, "_logfile_maxbytes") && !strings.HasSuffix(key, "_logfile_backups") {
			p.warn(key, "not imported: no supervise equivalent")
		}
	}
	return nil
}

// pyFormat expands s as Python's "s % mapping" does, which is how
// supervisord expands its values: %% is a %, and %(name) followed by
// flags, a width, a precision and a conversion is look(name) formatted.
// plain says the spec is exactly %(name)s. It supports what a
// supervisord.conf uses (s and d, width, precision, - and 0); any other
// spec is an error, as a bad one is to supervisord.
func pyFormat(s string, look func(name string, plain bool) (any, error)) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '%')
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		b.WriteString(s[i : i+j])
		start := i + j
		i = start + 1
		if i < len(s) && s[i] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		if i >= len(s) || s[i] != '(' {
			return "", fmt.Errorf("a %% that is neither %%%% nor %%(name)s at %q", clip(s[start:]))
		}
		// The name runs to the matching parenthesis, as in Python.
		depth, k := 1, i+1
		for ; k < len(s) && depth > 0; k++ {
			switch s[k] {
			case '(':
				depth++
			case ')':
				depth--
			}
		}
		if depth > 0 {
			return "", fmt.Errorf("an unclosed %%( at %q", clip(s[start:]))
		}
		name := s[i+1 : k-1]
		i = k
		var left, zero, other bool
		for ; i < len(s) && strings.IndexByte("-+ #0", s[i]) >= 0; i++ {
			switch s[i] {
			case '-':
				left = true
			case '0':
				zero = true
			default:
				other = true
			}
		}
		width, prec := -1, -1
		var err error
		if width, i, err = fmtNumber(s, i); err != nil {
			return "", err
		}
		if i < len(s) && s[i] == '.' {
			if prec, i, err = fmtNumber(s, i+1); err != nil {
				return "", err
			}
			if prec < 0 {
				prec = 0
			}
		}
		if i < len(s) && strings.IndexByte("hlL", s[i]) >= 0 {
			i++
		}
		if i >= len(s) {
			return "", fmt.Errorf("an incomplete format at %q", clip(s[start:]))
		}
		conv := s[i]
		i++
		spec := s[start:i]
		v, err := look(name, spec == "%("+name+")s")
		if err != nil {
			return "", err
		}
		var out string
		switch v := v.(type) {
		case keepSpec:
			if v.marked {
				spec = refMark + "+" + hex.EncodeToString([]byte(spec)) + refMark
			}
			b.WriteString(spec)
			continue
		case envRef:
			b.WriteString(refMark + string(v) + refMark)
			continue
		case int:
			switch {
			case other:
			case conv == 'd' || conv == 'i' || conv == 'u':
				out = strconv.Itoa(v)
				if prec >= 0 || zero && !left {
					// zero padding comes after the sign
					neg := v < 0
					digits := strings.TrimPrefix(out, "-")
					n := max(prec, 0)
					if zero && !left && prec < 0 {
						n = width
						if neg {
							n--
						}
					}
					if pad := n - len(digits); pad > 0 {
						digits = strings.Repeat("0", pad) + digits
					}
					out = digits
					if neg {
						out = "-" + digits
					}
				}
				conv = 's'
				prec = -1
			case conv == 's':
				out = strconv.Itoa(v)
			}
		case string:
			if !other {
				out = v
			}
		}
		if conv != 's' || other {
			return "", fmt.Errorf("%q: supported are %%(name)s and %%(name)d with a width, a precision, - and 0", clip(spec))
		}
		if prec >= 0 && utf8.RuneCountInString(out) > prec {
			out = string([]rune(out)[:prec])
		}
		if pad := width - utf8.RuneCountInString(out); pad > 0 {
			if left {
				out += strings.Repeat(" ", pad)
			} else {
				out = strings.Repeat(" ", pad) + out
			}
		}
		b.WriteString(out)
		if b.Len() > maxImportSize {
			// %(here)s is 8 bytes and may stand for 4 KiB
			return "", fmt.Errorf("expands to %w", errTooLarge)
		}
	}
	return b.String(), nil
}

// fmtNumber reads the digits of a width or precision at s[i:]: -1 when
// there are none, an error past maxFormatWidth (a %(x)999999999s would
// otherwise make a gigabyte) or for *, which a mapping cannot feed.
func fmtNumber(s string, i int) (int, int, error) {
	if i < len(s) && s[i] == '*' {
		return 0, i, fmt.Errorf("a * width in %q: supervisord refuses it", clip(s))
	}
	n, j := 0, i
	for ; j < len(s) && s[j] >= '0' && s[j] <= '9'; j++ {
		if n = n*10 + int(s[j]-'0'); n > maxFormatWidth {
			return 0, i, fmt.Errorf("a width or precision over %d in %q", maxFormatWidth, clip(s))
		}
	}
	if j == i {
		return -1, i, nil
	}
	return n, j, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// shlexSplit splits a command line as Python's shlex.split does in POSIX
// mode (what supervisord does before it execs): blanks separate words, \
// keeps the next character, '…' keeps everything, "…" keeps everything
// but \" and \\. Nothing else is special: $, `, ;, |, # are bytes of a
// word.
func shlexSplit(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool
	)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\r', '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case '\\':
			if i++; i >= len(s) {
				return nil, errors.New(`a \ at the end, with nothing to escape`)
			}
			cur.WriteByte(s[i])
			in = true
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("no closing quotation (')")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			in = true
		case '"':
			in = true
			for i++; ; i++ {
				if i >= len(s) {
					return nil, errors.New(`no closing quotation (")`)
				}
				if s[i] == '"' {
					break
				}
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// envPairs reads environment=KEY=VAL,… as supervisord does: Python's shlex
// lexer in POSIX mode (words of letters, digits and _/.+-():, quotes and \
// as in shlex.split, # starting a comment to the line's end, any other
// character a token of its own), then KEY, "=", VAL and one separator
// token at a time.
func envPairs(s string) (map[string]string, error) {
	toks, err := envTokens(s)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for i := 0; i < len(toks); i += 4 {
		if i+2 >= len(toks) || toks[i+1] != "=" {
			return nil, fmt.Errorf("want KEY=VALUE pairs separated by commas, not %q", clip(strings.Join(toks[i:], " ")))
		}
		env[toks[i]] = toks[i+2]
	}
	return env, nil
}

func isEnvWordRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	case r == 0: // refMark: a ref stays inside its word
		return true
	case r < 0x80:
		return strings.ContainsRune("_/.+-():", r)
	}
	// shlex's POSIX word characters include Latin-1's letters
	return r >= 0xC0 && r <= 0xFF && r != 0xD7 && r != 0xF7
}

func envTokens(s string) ([]string, error) {
	var (
		toks   []string
		cur    strings.Builder
		quoted bool // the token holds a quoted part, perhaps empty
		state  = ' '
	)
	emit := func() {
		if cur.Len() > 0 || quoted {
			toks = append(toks, cur.String())
		}
		cur.Reset()
		quoted = false
		state = ' '
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch state {
		case '\'', '"':
			switch {
			case r == state:
				state = 'a'
			case r == '\\' && state == '"' && i < len(s) && (s[i] == '"' || s[i] == '\\'):
				cur.WriteByte(s[i])
				i++
			default:
				cur.WriteRune(r)
			}
			continue
		}
		switch {
		case r == ' ' || r == '\t' || r == '\r' || r == '\n':
			emit()
		case r == '#':
			emit()
			if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(s)
			}
		case r == '\\':
			if i >= len(s) {
				return nil, errors.New(`a \ at the end, with nothing to escape`)
			}
			r, n := utf8.DecodeRuneInString(s[i:])
			i += n
			cur.WriteRune(r)
			state = 'a'
		case r == '\'' || r == '"':
			state, quoted = r, true
		case isEnvWordRune(r):
			cur.WriteRune(r)
			state = 'a'
		default:
			emit()
			toks = append(toks, string(r))
		}
	}
	if state == '\'' || state == '"' {
		return nil, errors.New("no closing quotation")
	}
	emit()
	return toks, nil
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
