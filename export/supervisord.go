package export

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/internal/smallfile"
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

// ImportSupervisordFile reads path and imports it, with the files its
// [include] section names. Only regular files of at most 1 MiB in all are
// read: a FIFO, a device or a directory is refused at once, never waited
// on nor read to its end.
func ImportSupervisordFile(path string) ([]byte, []Warning, error) {
	data, err := readImportFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("import %s: %w", path, err)
	}
	return importSupervisord(path, data, true)
}

// readImportFile reads a file to import: a regular file of at most
// maxImportSize bytes, never waiting on a FIFO or reading a device.
func readImportFile(path string) ([]byte, error) {
	data, err := smallfile.Read(path, maxImportSize)
	var tooLarge *smallfile.TooLargeError
	if errors.As(err, &tooLarge) {
		return nil, errTooLarge
	}
	return data, err
}

// ImportSupervisord translates a supervisord configuration into a
// supervise.toml, with a warning for every key or section that has no
// equivalent. Only [program:x] sections become programs. It reads the
// file as supervisord does: Python's configparser (see parseINI), every
// value "%"-expanded (see pyFormat), command= split by Python's shlex in
// POSIX mode (shlexSplit) and environment= by its lexer (envPairs). The
// command is written as argv words: nothing of it reaches a shell, but
// for %(process_num)s (see perInstance). An [include] section is not read
// (ImportSupervisordFile reads it).
func ImportSupervisord(name string, data []byte) ([]byte, []Warning, error) {
	return importSupervisord(name, data, false)
}

// supervisordEntry is a [program:x] to import.
type supervisordEntry struct {
	s              *iniSection
	prog, tomlName string
	priority       int
	steady         bool // autostarted and restarted always: a dependency that stays
}

func importSupervisord(name string, data []byte, includes bool) ([]byte, []Warning, error) {
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
	im := &supervisordImport{name: name, dir: filepath.Dir(here), ini: ini, includes: includes}
	if includes {
		if err := ini.include(im.dir, len(data), &im.ws); err != nil {
			return nil, nil, fmt.Errorf("import %s: [include]: %w", name, err)
		}
	}
	// %q: a file name may hold a newline, which would end the comment.
	fmt.Fprintf(&im.b, "# Imported by supervise from the supervisord configuration %q.\n", name)
	if err := im.sections(); err != nil {
		return nil, nil, err
	}
	if err := im.writePrograms(); err != nil {
		return nil, nil, err
	}
	for _, k := range sortedKeys(ini.defaults) {
		if !slices.Contains(defaultKeys, k) {
			im.ws.add("", "[DEFAULT] "+k, "not imported: no supervise equivalent")
		}
	}
	return []byte(im.b.String()), im.ws, nil
}

// supervisordImport is one supervisord.conf (and its includes) being
// written as a supervise.toml.
type supervisordImport struct {
	name, dir string // the file as named, and its directory (%(here)s)
	ini       *iniFile
	includes  bool // [include] was read
	b         strings.Builder
	ws        warnings
	entries   []*supervisordEntry
}

// sections reads the sections in order: [supervisord]'s environment= is
// written, each [program:x] becomes an entry, the others are warned
// about.
func (im *supervisordImport) sections() error {
	used := map[string]bool{}
	seen := 0
	for _, s := range im.ini.sections {
		prog, ok := strings.CutPrefix(s.name, "program:")
		if !ok {
			if err := im.other(s); err != nil {
				return err
			}
			continue
		}
		seen++
		prog = strings.TrimSpace(prog) // as supervisord does
		e, err := im.entry(s, prog, used)
		if err != nil {
			return err
		}
		if e != nil {
			im.entries = append(im.entries, e)
		}
	}
	switch {
	case seen == 0:
		return fmt.Errorf("import %s: no [program:x] section", im.name)
	case len(im.entries) == 0:
		return fmt.Errorf("import %s: no [program:x] section with a name supervise can take", im.name)
	}
	return nil
}

// other handles a section that is not a [program:x].
func (im *supervisordImport) other(s *iniSection) error {
	switch {
	case s.name == "supervisord":
		if err := writeGlobalEnv(&im.b, s, im.dir, &im.ws); err != nil {
			return fmt.Errorf("import %s:%d: [supervisord]: %w", s.file, s.line, err)
		}
	case s.name == "supervisorctl", s.name == "unix_http_server", s.name == "inet_http_server",
		strings.HasPrefix(s.name, "rpcinterface:"):
		// supervisord's own settings: supervise has its own.
	case s.name == "include" && im.includes:
		// read before
	case s.name == "include":
		im.ws.add("", "[include]", "not read: import the file by its path to read the files it includes")
	case strings.HasPrefix(s.name, "group:"):
		im.ws.add("", "["+s.name+"]", "not imported: supervise has no groups; its programs (%s) are imported one by one", strings.TrimSpace(s.keys["programs"]))
	default:
		im.ws.add("", "["+s.name+"]", "not imported: only [program:x] sections have a supervise equivalent")
	}
	return nil
}

// entry reads [program:prog] into an entry, or nil (warned about) when
// its name cannot be taken.
func (im *supervisordImport) entry(s *iniSection, prog string, used map[string]bool) (*supervisordEntry, error) {
	tomlName := NamePart(prog)
	switch {
	case !programNameRE().MatchString(tomlName):
		im.ws.add(prog, "name", "not imported: %q cannot name a supervise program (1-63 letters, digits, '_', '-' or '.', starting with a letter or digit)", prog)
		return nil, nil
	case used[tomlName]:
		im.ws.add(prog, "name", "not imported: a program before it is already named %s", tomlName)
		return nil, nil
	case tomlName != prog:
		im.ws.add(prog, "name", "renamed to %s: supervise names take letters, digits, '_', '-' and '.'", tomlName)
	}
	used[tomlName] = true
	if len(im.entries) >= maxImportPrograms {
		return nil, fmt.Errorf("import %s: more than %d programs, the most a supervise config holds", im.name, maxImportPrograms)
	}
	for _, k := range defaultKeys {
		// [DEFAULT] is under every section, as in configparser
		if v, ok := im.ini.defaults[k]; ok {
			if _, ok := s.keys[k]; !ok {
				s.keys[k] = v
			}
		}
	}
	e := &supervisordEntry{s: s, prog: prog, tomlName: tomlName, priority: 999}
	if v, ok := s.keys["priority"]; ok {
		var err error
		if e.priority, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
			return nil, fmt.Errorf("import %s:%d: program %q: priority: %q is not a number", s.file, s.line, prog, v)
		}
	}
	restart, err := autorestart(s.keys)
	if err != nil {
		return nil, fmt.Errorf("import %s:%d: program %q: %w", s.file, s.line, prog, err)
	}
	e.steady = restart == config.RestartAlways && (s.keys["autostart"] == "" || truthy(s.keys["autostart"]))
	return e, nil
}

// writePrograms writes the entries, each in its [group:x] (for
// %(group_name)s) and after the programs of lower priority.
func (im *supervisordImport) writePrograms() error {
	groups := map[string]string{} // program → its [group:x]
	for _, s := range im.ini.sections {
		if g, ok := strings.CutPrefix(s.name, "group:"); ok {
			for _, p := range strings.Split(s.keys["programs"], ",") {
				groups[strings.TrimSpace(p)] = strings.TrimSpace(g)
			}
		}
	}
	after := priorityOrder(im.entries)
	for _, e := range im.entries {
		group := cmp.Or(groups[e.prog], e.prog)
		p := &supervisordProgram{name: e.prog, tomlName: e.tomlName, group: group, here: im.dir, keys: e.s.keys, ws: &im.ws, after: after[e]}
		if err := p.write(&im.b); err != nil {
			return fmt.Errorf("import %s:%d: program %q: %w", e.s.file, e.s.line, e.prog, err)
		}
		if im.b.Len() > maxImportSize {
			return fmt.Errorf("import %s: the supervise.toml written would be %w", im.name, errTooLarge)
		}
	}
	return nil
}

// priorityOrder approximates supervisord's priority (lower starts first,
// stops last) with depends_on: a program waits for the programs of the
// nearest lower priority to be running. Only a program autostarted and
// restarted always is waited for: one that may end for good would keep
// its dependents waiting for ever.
func priorityOrder(entries []*supervisordEntry) map[*supervisordEntry][]string {
	levels := map[int][]*supervisordEntry{}
	for _, e := range entries {
		levels[e.priority] = append(levels[e.priority], e)
	}
	if len(levels) < 2 {
		return nil
	}
	order := slices.Sorted(maps.Keys(levels))
	after := map[*supervisordEntry][]string{}
	var below []string // the steady programs of the nearest lower level that has some
	for _, pr := range order {
		var steady []string
		for _, e := range levels[pr] {
			after[e] = below
			if e.steady {
				steady = append(steady, e.tomlName)
			}
		}
		if len(steady) > 0 {
			below = steady
		}
	}
	return after
}

// autorestart reads autorestart= as supervisord does: a boolean, or
// "unexpected" (its default: restart on an exit status not in exitcodes).
func autorestart(k map[string]string) (config.RestartPolicy, error) {
	v, ok := k["autorestart"]
	if !ok {
		return config.RestartOnFailure, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "yes", "on", "1":
		return config.RestartAlways, nil
	case "false", "no", "off", "0":
		return config.RestartNever, nil
	case "unexpected":
		return config.RestartOnFailure, nil
	}
	return "", fmt.Errorf("autorestart: %q is not true, false or unexpected", v)
}

// writeGlobalEnv writes [supervisord] environment= as [defaults] env:
// under every program, whose own environment= wins key by key, as in
// supervisord, where it is the environment programs inherit.
func writeGlobalEnv(b *strings.Builder, s *iniSection, here string, ws *warnings) error {
	v, ok := s.keys["environment"]
	if !ok {
		return nil
	}
	p := &supervisordProgram{name: "", here: here, keys: s.keys, ws: ws, warned: map[string]bool{}}
	if err := p.readEnv(v); err != nil {
		return err
	}
	if len(p.env) > 0 {
		fmt.Fprintf(b, "\n[defaults]\n")
		p.writeEnv(b, p.env)
	}
	return nil
}

// defaultKeys are the keys a [DEFAULT] section may give every program:
// those the importer maps. Copying only these keeps the cost linear
// however many programs and defaults a file has.
var defaultKeys = []string{"command", "directory", "user", "numprocs", "numprocs_start", "autostart", "autorestart",
	"priority", "stopasgroup", "killasgroup", "exitcodes", "stopsignal", "stopwaitsecs", "umask", "environment", "redirect_stderr",
	"stdout_logfile", "stdout_logfile_maxbytes", "stdout_logfile_backups",
	"stderr_logfile", "stderr_logfile_maxbytes", "stderr_logfile_backups"}

// programNameRE is what config accepts as a program name.
var programNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`) })

type iniSection struct {
	name string
	file string
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
	p := &iniParser{file: file, f: &iniFile{}, defaults: map[string][]string{},
		byName: map[string]*iniSection{}, values: map[*iniSection]map[string][]string{}}
	for ln, rest := 1, text; rest != ""; ln++ {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if err := p.line(ln, line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, ln, err)
		}
	}
	join := func(m map[string][]string) map[string]string {
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = strings.TrimRightFunc(strings.Join(v, "\n"), unicode.IsSpace)
		}
		return out
	}
	p.f.defaults = join(p.defaults)
	for _, s := range p.f.sections {
		s.keys = join(p.values[s])
	}
	return p.f, nil
}

// iniParser is parseINI's state between lines.
type iniParser struct {
	file     string
	f        *iniFile
	defaults map[string][]string // the lines of [DEFAULT]'s values
	byName   map[string]*iniSection
	values   map[*iniSection]map[string][]string
	cur      map[string][]string // the section being read, nil before the first
	opt      string              // the key being read, "" after a header
	indent   int                 // of the last line that continued no value
}

// line reads line ln: a header, a key, or the next line of a value.
func (p *iniParser) line(ln int, line string) error {
	value, commented := iniValue(line)
	inValue := p.cur != nil && p.opt != ""
	if value == "" {
		if !commented && inValue {
			p.cur[p.opt] = append(p.cur[p.opt], "") // a blank line inside a value
		}
		return nil
	}
	ind := len(line) - len(strings.TrimLeft(line, " \t\f\v"))
	if inValue && ind > p.indent {
		p.cur[p.opt] = append(p.cur[p.opt], value)
		return nil
	}
	p.indent = ind
	if value[0] == '[' {
		return p.header(ln, value)
	}
	if p.cur == nil {
		return errors.New("a key outside any section")
	}
	i := strings.IndexAny(value, "=:")
	if i < 0 {
		return errors.New("want key = value")
	}
	p.opt = strings.ToLower(strings.TrimSpace(value[:i]))
	if p.opt == "" {
		return errors.New("a value with no key")
	}
	p.cur[p.opt] = []string{strings.TrimSpace(value[i+1:])}
	return nil
}

// iniValue is line without its comment, trimmed; commented says it had
// one.
func iniValue(line string) (string, bool) {
	at := inlineComment(line)
	if t := strings.TrimSpace(line); strings.HasPrefix(t, ";") || strings.HasPrefix(t, "#") {
		at = 0
	}
	if at >= 0 {
		line = line[:at]
	}
	return strings.TrimSpace(line), at >= 0
}

// header starts the section that value, a [name] line, names: a new
// one, or one seen before, which it continues.
func (p *iniParser) header(ln int, value string) error {
	end := strings.LastIndexByte(value, ']')
	if end < 0 {
		return errors.New("unclosed section header")
	}
	if end == 1 {
		return errors.New("a section header with no name")
	}
	name := value[1:end]
	switch s := p.byName[name]; {
	case name == "DEFAULT":
		p.cur = p.defaults
	case s != nil:
		p.cur = p.values[s]
	default:
		s = &iniSection{name: name, file: p.file, line: ln}
		p.byName[name] = s
		p.f.sections = append(p.f.sections, s)
		p.cur = map[string][]string{}
		p.values[s] = p.cur
	}
	p.opt = ""
	return nil
}

// maxIncludeFiles bounds the files an [include] reads; their bytes count
// against the 1 MiB of the whole import.
const maxIncludeFiles = 256

// include reads the files [include] files= names, as supervisord does:
// whitespace-separated globs, %(here)s and %(ENV_X)s expanded, relative to
// the including file's directory, each glob's matches in sorted order.
// Their sections are merged into f: a section seen before takes the new
// keys, a new one is added. An included file's own [include] is not read,
// as supervisord does not.
func (f *iniFile) include(dir string, read int, ws *warnings) error {
	i := slices.IndexFunc(f.sections, func(s *iniSection) bool { return s.name == "include" })
	if i < 0 {
		return nil
	}
	inc := f.sections[i]
	v, ok := inc.keys["files"]
	if !ok {
		return fmt.Errorf("%s:%d: no files= (supervisord refuses the section without it)", inc.file, inc.line)
	}
	v, err := pyFormat(v, func(name string, _ bool) (any, error) {
		if name == "here" {
			return dir, nil
		}
		if x, ok := strings.CutPrefix(name, "ENV_"); ok {
			if val, ok := os.LookupEnv(x); ok {
				return val, nil
			}
			return nil, fmt.Errorf("files: %%(ENV_%s)s: %s is not set here", x, x)
		}
		return nil, fmt.Errorf("files: %%(%s): supervisord has no such expansion here", name)
	})
	if err != nil {
		return err
	}
	m := &iniMerge{f: f, byName: map[string]*iniSection{}, read: read}
	for _, s := range f.sections {
		m.byName[s.name] = s
	}
	for _, pat := range strings.Fields(v) {
		if !filepath.IsAbs(pat) {
			pat = filepath.Join(dir, pat)
		}
		matches, err := filepath.Glob(pat)
		if err != nil {
			return fmt.Errorf("%q: %w", pat, err)
		}
		if len(matches) == 0 {
			ws.add("", "[include]", "%s matches no file here: import where the included files are, or add their programs by hand", pat)
			continue
		}
		sort.Strings(matches)
		for _, name := range matches {
			if err := m.add(name); err != nil {
				return err
			}
		}
	}
	return nil
}

// iniMerge merges included files into f, counting the files and bytes
// read against their bounds.
type iniMerge struct {
	f           *iniFile
	byName      map[string]*iniSection
	files, read int
}

// add reads the file name and merges its sections, but for its own
// [include], into f.
func (m *iniMerge) add(name string) error {
	if m.files++; m.files > maxIncludeFiles {
		return fmt.Errorf("more than %d files", maxIncludeFiles)
	}
	data, err := readImportFile(name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if m.read += len(data); m.read > maxImportSize {
		return fmt.Errorf("the file and those it includes are %w in all", errTooLarge)
	}
	sub, err := parseINI(name, data)
	if err != nil {
		return err
	}
	maps.Copy(m.f.defaults, sub.defaults)
	for _, s := range sub.sections {
		switch t := m.byName[s.name]; {
		case s.name == "include":
		case t != nil:
			maps.Copy(t.keys, s.keys)
		default:
			m.byName[s.name] = s
			m.f.sections = append(m.f.sections, s)
		}
	}
	return nil
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
	after                       []string          // programs to start after (priority)
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
type keepSpec struct{ marked, drop bool }

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
			switch {
			case p.numprocs <= 1:
				return p.start, nil
			case key == "command" || key == "environment":
				// each instance computes it: see perInstance
				return keepSpec{marked: true}, nil
			case strings.HasSuffix(key, "_logfile"):
				p.warnOnce(key, name, "the instances share one file in supervise (their lines never cut into each other): %%(process_num) is left out of its name")
				return keepSpec{drop: true}, nil
			}
			p.warnOnce(key, name, "%%(process_num) differs per instance and is kept as written: supervise gives each instance its number in $SUPERVISE_INSTANCE")
			return keepSpec{}, nil
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
				if key == "command" {
					parts[i] = refMark + parts[i] + refMark // for perInstance
				} else {
					parts[i] = spec
				}
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

// write writes the program's table, warning about each key it does not
// map.
func (p *supervisordProgram) write(b *strings.Builder) error {
	done := map[string]bool{"command": true, "priority": true}
	p.warned = map[string]bool{}
	if err := p.readCounts(done); err != nil {
		return err
	}
	p.env = map[string]string{}
	if v, ok := p.keys["environment"]; ok {
		done["environment"] = true
		if err := p.readEnv(v); err != nil {
			return err
		}
	}
	if err := p.writeCommand(b); err != nil {
		return err
	}
	for _, r := range supervisordKeys {
		v, ok := p.keys[r.key]
		if !ok && !r.always {
			continue
		}
		done[r.key] = true
		val, err := r.value(p, r.key, v)
		if err != nil {
			return err
		}
		if val != "" {
			fmt.Fprintf(b, "%s = %s\n", r.toml, val)
		}
	}
	for _, key := range []string{"stopasgroup", "killasgroup"} {
		if v, ok := p.keys[key]; ok && truthy(v) {
			done[key] = true // what supervise always does
		}
	}
	if len(p.env) > 0 {
		p.writeEnv(b, p.env)
	}
	if err := p.writeLogs(b, done); err != nil {
		return err
	}
	p.warnUnmapped(done)
	return nil
}

// readCounts reads numprocs and numprocs_start.
func (p *supervisordProgram) readCounts(done map[string]bool) error {
	p.numprocs = 1
	for _, x := range []struct {
		key string
		to  *int
	}{{"numprocs", &p.numprocs}, {"numprocs_start", &p.start}} {
		if v, ok := p.keys[x.key]; ok {
			done[x.key] = true
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				return fmt.Errorf("%s: %q is not a count", x.key, v)
			}
			*x.to = n
		}
	}
	if _, ok := p.keys["process_name"]; ok && p.numprocs > 1 {
		p.warn("process_name", "instances are named %s:0 … %s:%d in supervise", p.tomlName, p.tomlName, p.numprocs-1)
		done["process_name"] = true
	}
	return nil
}

// writeCommand opens the program's table with its command: an array, as
// supervise runs exactly these words, as supervisord did.
func (p *supervisordProgram) writeCommand(b *strings.Builder) error {
	cmd, ok := p.keys["command"]
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
	if argv, err = p.perInstance(argv); err != nil {
		return err
	}
	fmt.Fprintf(b, "\n[program.%s]\n", tomlKey(p.tomlName))
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = tomlQuote(a)
	}
	fmt.Fprintf(b, "command = [%s]\n", strings.Join(words, ", "))
	return nil
}

// supervisordKey maps a [program:x] key to a line "toml = value" of the
// program's table; an empty value writes nothing. value is called when
// the key is given, and always when always is set (v is then "").
type supervisordKey struct {
	key, toml string
	always    bool
	value     func(p *supervisordProgram, key, v string) (string, error)
}

// supervisordKeys are the keys written after the command, in the order
// they are written. environment= and the log keys are written after
// them by writeEnv and writeLogs.
var supervisordKeys = []supervisordKey{
	{key: "directory", toml: "dir", value: (*supervisordProgram).expandQuoted},
	{key: "user", toml: "user", value: (*supervisordProgram).expandQuoted},
	{key: "numprocs", toml: "instances", value: func(p *supervisordProgram, _, _ string) (string, error) {
		if p.numprocs > 1 {
			return strconv.Itoa(p.numprocs), nil
		}
		return "", nil
	}},
	{key: "autostart", toml: "autostart", value: func(_ *supervisordProgram, _, v string) (string, error) {
		return strconv.FormatBool(truthy(v)), nil
	}},
	{key: "autorestart", toml: "restart", always: true, value: func(p *supervisordProgram, _, _ string) (string, error) {
		restart, err := autorestart(p.keys)
		return strconv.Quote(string(restart)), err
	}},
	{key: "exitcodes", toml: "success_exit_codes", value: func(_ *supervisordProgram, _, v string) (string, error) {
		var codes []string
		for _, c := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(c))
			if err != nil || n < 0 || n > 255 {
				return "", fmt.Errorf("exitcodes: %q is not an exit status", strings.TrimSpace(c))
			}
			codes = append(codes, strconv.Itoa(n))
		}
		return "[" + strings.Join(codes, ", ") + "]", nil
	}},
	{key: "priority", toml: "depends_on", always: true, value: (*supervisordProgram).dependsOn},
	{key: "stopsignal", toml: "stop_signal", value: func(_ *supervisordProgram, _, v string) (string, error) {
		return tomlQuote(strings.ToUpper(v)), nil
	}},
	{key: "stopwaitsecs", toml: "stop_timeout", value: func(_ *supervisordProgram, _, v string) (string, error) {
		return tomlQuote(v + "s"), nil
	}},
	{key: "umask", toml: "sandbox", value: func(_ *supervisordProgram, _, v string) (string, error) {
		return "{ umask = " + tomlQuote(v) + " }", nil
	}},
}

// expandQuoted is v expanded, as a TOML string.
func (p *supervisordProgram) expandQuoted(key, v string) (string, error) {
	v, err := p.expand(key, v, false)
	return tomlQuote(v), err
}

// dependsOn is the depends_on table that stands for supervisord's
// priority (see priorityOrder).
func (p *supervisordProgram) dependsOn(_, _ string) (string, error) {
	if len(p.after) == 0 {
		return "", nil
	}
	deps := make([]string, len(p.after))
	for i, d := range p.after {
		deps[i] = tomlKey(d) + ` = "running"`
	}
	p.warn("priority", "starts once %s (of the nearest lower priority) is running, and stops before it, as depends_on; supervisord started them in order without waiting", strings.Join(p.after, ", "))
	return "{ " + strings.Join(deps, ", ") + " }", nil
}

// supervisordUnmapped says why a key supervise has no equivalent for is
// not imported, where there is more to say than that.
var supervisordUnmapped = map[string]string{
	"startsecs":    "supervise counts every exit as a crash for its backoff; a run longer than reset_after (10m) forgives past crashes",
	"startretries": "supervise retries forever, waiting by the kubelet's crash backoff (10s doubling to 5m)",
	"stopasgroup":  "supervise always signals the program's process group",
	"killasgroup":  "supervise always kills the whole sandbox (its cgroup)",
	"serverurl":    "supervisorctl's setting",
}

// warnUnmapped warns about each key not done, in sorted order.
func (p *supervisordProgram) warnUnmapped(done map[string]bool) {
	for _, key := range sortedKeys(p.keys) {
		if done[key] {
			continue
		}
		if w, ok := supervisordUnmapped[key]; ok {
			p.warn(key, "not imported: %s", w)
		} else {
			p.warn(key, "not imported: no supervise equivalent")
		}
	}
}

// perInstance returns argv unchanged unless it or environment= holds
// %(process_num)s (a keepSpec, refMark-bracketed), which each instance
// computes: then the command becomes /bin/sh -c with a script in which
// every byte of the line is a single-quoted literal, and each
// %(process_num)s is printf of $SUPERVISE_INSTANCE + numprocs_start.
// The variables of environment= that hold one are exported by the script
// (the other ones stay in env); %(ENV_X)s in them is fixed at import.
func (p *supervisordProgram) perInstance(argv []string) ([]string, error) {
	var exports []string
	for _, key := range sortedKeys(p.env) {
		v := p.env[key]
		if !hasKeptSpec(v) {
			continue
		}
		if !envNameRE().MatchString(key) {
			return nil, fmt.Errorf("environment: %s holds %%(process_num) but is no name sh can export", key)
		}
		w, err := p.shellWord(v)
		if err != nil {
			return nil, fmt.Errorf("environment: %s: %w", key, err)
		}
		exports = append(exports, "export "+key+"="+w+"; ")
		delete(p.env, key)
	}
	dynamic := len(exports) > 0
	for _, a := range argv {
		dynamic = dynamic || strings.Contains(a, refMark)
	}
	if !dynamic {
		return argv, nil
	}
	var script strings.Builder
	for _, e := range exports {
		script.WriteString(e)
	}
	script.WriteString("exec")
	for _, a := range argv {
		w, err := p.shellWord(a)
		if err != nil {
			return nil, fmt.Errorf("command: %w", err)
		}
		script.WriteString(" " + w)
	}
	p.warn("command", "%%(process_num) differs per instance: the command runs through /bin/sh -c, which computes it from $SUPERVISE_INSTANCE + %d; every word of the line stays a quoted literal", p.start)
	return []string{"/bin/sh", "-c", script.String()}, nil
}

func hasKeptSpec(v string) bool {
	parts := strings.Split(v, refMark)
	for i := 1; i < len(parts); i += 2 {
		if _, ok := keptSpec(parts[i]); ok {
			return true
		}
	}
	return false
}

// shellWord writes v as one sh word: its literal parts single-quoted, its
// %(process_num) parts as printf of the instance's number, and its refs
// (%(ENV_X)s of environment=) their values here.
func (p *supervisordProgram) shellWord(v string) (string, error) {
	var b strings.Builder
	parts := strings.Split(v, refMark)
	for i, part := range parts {
		lit := part
		if i%2 == 1 {
			spec, ok := keptSpec(part)
			if ok {
				f, err := printfFormat(spec)
				if err != nil {
					return "", err
				}
				fmt.Fprintf(&b, `"$(printf %s "$((SUPERVISE_INSTANCE + %d))")"`, shellQuote(f), p.start)
				continue
			}
			val, err := p.lookupEnv("environment", part)
			if err != nil {
				return "", err
			}
			lit = val
		}
		if lit != "" {
			b.WriteString(shellQuote(lit))
		}
	}
	if b.Len() == 0 {
		return "''", nil
	}
	return b.String(), nil
}

// shellQuote single-quotes s for sh: nothing in it is special then.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printfFormat turns a kept %(process_num)… spec into printf's format
// for an integer: its flags, width and precision, and a conversion sh's
// printf reads as Python does.
func printfFormat(spec string) (string, error) {
	_, rest, ok := strings.Cut(spec, ")")
	if !ok || rest == "" {
		return "", fmt.Errorf("%q: not a format", clip(spec))
	}
	conv := rest[len(rest)-1]
	flags := strings.NewReplacer("h", "", "l", "", "L", "").Replace(rest[:len(rest)-1])
	switch conv {
	case 's', 'd', 'x', 'X', 'o':
	case 'i', 'u':
		conv = 'd'
	default:
		return "", fmt.Errorf("%q: supported are %%(process_num)s and %%(process_num)d with a width, a precision and flags", clip(spec))
	}
	return "%" + flags + string(conv), nil
}

// readEnv reads environment= into p.env.
func (p *supervisordProgram) readEnv(v string) error {
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
	return nil
}

// writeEnv writes env as an env table.
func (p *supervisordProgram) writeEnv(b *strings.Builder, env map[string]string) {
	var parts []string
	for _, key := range sortedKeys(env) {
		parts = append(parts, tomlKey(key)+" = "+tomlEnvValue(env[key]))
	}
	fmt.Fprintf(b, "env = { %s }\n", strings.Join(parts, ", "))
}

// supervisord's rotation, when the file does not say: 50 MB, 10 backups.
const (
	supervisordMaxBytes = 50 << 20
	supervisordBackups  = 10
)

// writeLogs writes the stdout and stderr tables: a file with supervisord's
// rotation (its maxbytes, 0 never rotating; its backups plus the current
// file, which supervise's max_files counts), or the console.
func (p *supervisordProgram) writeLogs(b *strings.Builder, done map[string]bool) error {
	k := p.keys
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
		}
		v, err := p.expand(key, v, false)
		if config.IsConsolePath(v) {
			// a container's way to reach its console: supervise's own
			return "", err
		}
		return v, err
	}
	out, err := logFile("stdout")
	if err != nil {
		return err
	}
	// redirect_stderr is the program's 2>&1, as stderr = "stdout" is;
	// supervisord writes stderr_logfile "unless redirect_stderr is true".
	redirect := truthy(k["redirect_stderr"])
	done["redirect_stderr"] = true
	errf := ""
	if redirect {
		for _, key := range []string{"stderr_logfile", "stderr_logfile_maxbytes", "stderr_logfile_backups"} {
			if _, ok := k[key]; ok {
				p.warn(key, "not imported: redirect_stderr=true sends stderr where stdout goes, as supervisord does")
			}
			done[key] = true
		}
	} else if errf, err = logFile("stderr"); err != nil {
		return err
	}
	for _, x := range []struct{ stream, file string }{{"stdout", out}, {"stderr", errf}} {
		size, backups := x.stream+"_logfile_maxbytes", x.stream+"_logfile_backups"
		done[size], done[backups] = true, true
		if x.stream == "stderr" && redirect {
			b.WriteString("stderr = \"stdout\"\n")
			continue
		}
		if x.file == "" {
			continue
		}
		n := int64(supervisordMaxBytes)
		if v, ok := k[size]; ok {
			if n, ok = supervisordBytes(v); !ok {
				return fmt.Errorf("%s: %q is not a size", size, v)
			}
			if n > 0 && n < 4096 {
				p.warn(size, "%d bytes is below supervise's smallest max_size: 4KiB", n)
				n = 4096
			}
		}
		files := supervisordBackups
		if v, ok := k[backups]; ok {
			if files, err = strconv.Atoi(strings.TrimSpace(v)); err != nil || files < 0 {
				return fmt.Errorf("%s: %q is not a count", backups, v)
			}
		}
		fmt.Fprintf(b, "%s = { file = %s, max_size = %d, max_files = %d }\n", x.stream, tomlQuote(x.file), n, min(files+1, 1000))
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
		i += j
		if strings.HasPrefix(s[i:], "%%") {
			b.WriteByte('%')
			i += 2
			continue
		}
		sp, err := parsePySpec(s, i)
		if err != nil {
			return "", err
		}
		i += len(sp.text)
		v, err := look(sp.name, sp.text == "%("+sp.name+")s")
		if err != nil {
			return "", err
		}
		switch v := v.(type) {
		case keepSpec:
			b.WriteString(v.spec(sp.text))
			continue
		case envRef:
			b.WriteString(refMark + string(v) + refMark)
			continue
		}
		out, err := sp.format(v)
		if err != nil {
			return "", err
		}
		b.WriteString(out)
		if b.Len() > maxImportSize {
			// %(here)s is 8 bytes and may stand for 4 KiB
			return "", fmt.Errorf("expands to %w", errTooLarge)
		}
	}
	return b.String(), nil
}

// spec is what a keepSpec writes in place of the spec it stands for.
func (k keepSpec) spec(text string) string {
	switch {
	case k.drop:
		return ""
	case k.marked:
		return refMark + "+" + hex.EncodeToString([]byte(text)) + refMark
	}
	return text
}

// pySpec is one %(name)… conversion of a format string.
type pySpec struct {
	text        string // from the % to the conversion character
	name        string
	left, zero  bool // the - and 0 flags
	other       bool // a +, blank or # flag, which pyFormat refuses
	width, prec int  // -1 when absent
	conv        byte
}

// parsePySpec reads the conversion that starts at s[start], a %.
func parsePySpec(s string, start int) (pySpec, error) {
	i := start + 1
	if i >= len(s) || s[i] != '(' {
		return pySpec{}, fmt.Errorf("a %% that is neither %%%% nor %%(name)s at %q", clip(s[start:]))
	}
	end := closingParen(s, i)
	if end < 0 {
		return pySpec{}, fmt.Errorf("an unclosed %%( at %q", clip(s[start:]))
	}
	sp := pySpec{name: s[i+1 : end], prec: -1}
	i = sp.flags(s, end+1)
	var err error
	if sp.width, i, err = fmtNumber(s, i); err != nil {
		return pySpec{}, err
	}
	if i < len(s) && s[i] == '.' {
		if sp.prec, i, err = fmtNumber(s, i+1); err != nil {
			return pySpec{}, err
		}
		sp.prec = max(sp.prec, 0)
	}
	if i < len(s) && strings.IndexByte("hlL", s[i]) >= 0 {
		i++ // a length modifier, which Python ignores
	}
	if i >= len(s) {
		return pySpec{}, fmt.Errorf("an incomplete format at %q", clip(s[start:]))
	}
	sp.conv = s[i]
	sp.text = s[start : i+1]
	return sp, nil
}

// closingParen is the index of the ) that closes the ( at s[open],
// nesting as Python's does, or -1.
func closingParen(s string, open int) int {
	depth := 0
	for k := open; k < len(s); k++ {
		switch s[k] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return k
			}
		}
	}
	return -1
}

// flags reads the flags at s[i:] and returns where they end.
func (sp *pySpec) flags(s string, i int) int {
	for ; i < len(s) && strings.IndexByte("-+ #0", s[i]) >= 0; i++ {
		switch s[i] {
		case '-':
			sp.left = true
		case '0':
			sp.zero = true
		default:
			sp.other = true
		}
	}
	return i
}

// format writes v, a looked-up value, as sp says.
func (sp pySpec) format(v any) (string, error) {
	if sp.other {
		return "", sp.unsupported()
	}
	var out string
	switch v := v.(type) {
	case int:
		if strings.IndexByte("diu", sp.conv) >= 0 {
			return sp.pad(sp.decimal(v), -1), nil
		}
		out = strconv.Itoa(v)
	case string:
		out = v
	}
	if sp.conv != 's' {
		return "", sp.unsupported()
	}
	return sp.pad(out, sp.prec), nil
}

func (sp pySpec) unsupported() error {
	return fmt.Errorf("%q: supported are %%(name)s and %%(name)d with a width, a precision, - and 0", clip(sp.text))
}

// decimal writes v as %d does: a precision is the least number of
// digits, and the 0 flag pads to the width; zeros come after the sign.
func (sp pySpec) decimal(v int) string {
	out := strconv.Itoa(v)
	if sp.prec < 0 && (!sp.zero || sp.left) {
		return out
	}
	digits, neg := strings.CutPrefix(out, "-")
	n := max(sp.prec, 0)
	if sp.prec < 0 {
		n = sp.width
		if neg {
			n--
		}
	}
	if pad := n - len(digits); pad > 0 {
		digits = strings.Repeat("0", pad) + digits
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// pad cuts out to prec characters (when prec >= 0) and pads it with
// blanks to the width, on the left unless the - flag is given.
func (sp pySpec) pad(out string, prec int) string {
	if prec >= 0 && utf8.RuneCountInString(out) > prec {
		out = string([]rune(out)[:prec])
	}
	pad := sp.width - utf8.RuneCountInString(out)
	switch {
	case pad <= 0:
		return out
	case sp.left:
		return out + strings.Repeat(" ", pad)
	}
	return strings.Repeat(" ", pad) + out
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

// envTokens splits s into shlex's tokens (see envPairs).
func envTokens(s string) ([]string, error) {
	l := &envLexer{s: s}
	for l.i < len(s) {
		r, n := utf8.DecodeRuneInString(s[l.i:])
		l.i += n
		if l.quote != 0 {
			l.inQuote(r)
		} else if err := l.outside(r); err != nil {
			return nil, err
		}
	}
	if l.quote != 0 {
		return nil, errors.New("no closing quotation")
	}
	l.emit()
	return l.toks, nil
}

// envLexer is envTokens' state: s is read from i on.
type envLexer struct {
	s      string
	i      int
	toks   []string
	cur    strings.Builder
	quoted bool // the token holds a quoted part, perhaps empty
	quote  rune // the quote being read, 0 outside quotes
}

// emit ends the token being read, if there is one.
func (l *envLexer) emit() {
	if l.cur.Len() > 0 || l.quoted {
		l.toks = append(l.toks, l.cur.String())
	}
	l.cur.Reset()
	l.quoted = false
}

// inQuote reads r inside quotes: only the closing quote, and in "…" a \
// before " or \, are special.
func (l *envLexer) inQuote(r rune) {
	switch {
	case r == l.quote:
		l.quote = 0
	case r == '\\' && l.quote == '"' && l.i < len(l.s) && (l.s[l.i] == '"' || l.s[l.i] == '\\'):
		l.cur.WriteByte(l.s[l.i])
		l.i++
	default:
		l.cur.WriteRune(r)
	}
}

// outside reads r outside quotes.
func (l *envLexer) outside(r rune) error {
	switch {
	case r == ' ' || r == '\t' || r == '\r' || r == '\n':
		l.emit()
	case r == '#':
		l.emit()
		if j := strings.IndexByte(l.s[l.i:], '\n'); j >= 0 {
			l.i += j + 1
		} else {
			l.i = len(l.s)
		}
	case r == '\\':
		if l.i >= len(l.s) {
			return errors.New(`a \ at the end, with nothing to escape`)
		}
		r, n := utf8.DecodeRuneInString(l.s[l.i:])
		l.i += n
		l.cur.WriteRune(r)
	case r == '\'' || r == '"':
		l.quote, l.quoted = r, true
	case isEnvWordRune(r):
		l.cur.WriteRune(r)
	default:
		l.emit()
		l.toks = append(l.toks, string(r))
	}
	return nil
}

// supervisordBytes reads a size as supervisord does: a number of bytes,
// or one with KB, MB or GB, which are powers of 1024.
func supervisordBytes(v string) (int64, bool) {
	u := strings.ToUpper(strings.TrimSpace(v))
	mult := int64(1)
	for _, x := range []struct {
		suffix string
		mult   int64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}} {
		if n, ok := strings.CutSuffix(u, x.suffix); ok {
			u, mult = strings.TrimSpace(n), x.mult
			break
		}
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil || n < 0 || n > (1<<53)/mult {
		return 0, false
	}
	return n * mult, true
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
