package export

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/supervise-dev/supervise/config"
	"sync"
)

// ProcessComposeFiles are the names process-compose looks for in its
// directory, in its order: the first found is the one it runs.
var ProcessComposeFiles = []string{"compose.yml", "compose.yaml", "process-compose.yml", "process-compose.yaml"}

// FindProcessCompose is the file process-compose would run in dir.
func FindProcessCompose(dir string) (string, error) {
	for _, n := range ProcessComposeFiles {
		f := filepath.Join(dir, n)
		if _, err := os.Stat(f); err == nil {
			return f, nil
		}
	}
	return "", fmt.Errorf("import process-compose: none of %s in %s", strings.Join(ProcessComposeFiles, ", "), dir)
}

// ProcessComposeOptions is what an import reads besides the file.
type ProcessComposeOptions struct {
	// DotEnv is the .env process-compose would read (nil: none). Its
	// variables reach every program (env_file) and are what a $VAR the
	// supervise.toml cannot leave to run time is fixed to.
	DotEnv map[string]string
	// DotEnvPath names the .env in the written env_file, relative to the
	// supervise.toml's directory.
	DotEnvPath string
	// Lookup is the environment process-compose would have substituted
	// from; nil is this process's.
	Lookup func(string) (string, bool)
}

// ImportProcessComposeFile reads path (a regular file of at most 1 MiB,
// as ImportSupervisordFile) and the .env beside it, and imports them;
// envFrom is the directory the supervise.toml will be in, which its
// env_file is relative to.
func ImportProcessComposeFile(path, envFrom string) ([]byte, []Warning, error) {
	data, err := readImportFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("import %s: %w", path, err)
	}
	var opts ProcessComposeOptions
	// process-compose reads the .env of the directory it runs in, which
	// is the file's when it finds the file itself.
	dotenv := filepath.Join(filepath.Dir(path), ".env")
	if _, err := os.Stat(dotenv); err == nil {
		if opts.DotEnv, err = config.LoadEnvFile(dotenv); err != nil {
			return nil, nil, fmt.Errorf("import %s: %w", path, err)
		}
		opts.DotEnvPath = dotenv
		if abs, err := filepath.Abs(dotenv); err == nil {
			if from, err := filepath.Abs(envFrom); err == nil {
				if rel, err := filepath.Rel(from, abs); err == nil {
					opts.DotEnvPath = rel
				}
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("import %s: %w", path, err)
	}
	return ImportProcessCompose(path, data, opts)
}

// maxAliasWork bounds the nodes the importer reads, aliases followed:
// yaml.v3 keeps an alias as a reference in its node tree, so a file of
// nested aliases ("billion laughs") is only expensive to whoever follows
// them, here. A 1 MiB file has at most some 250,000 keys of its own.
const maxAliasWork = 1 << 20

// maxMergeDepth bounds merge keys (<<) within merged mappings.
const maxMergeDepth = 64

// pcDefaultShell is process-compose's on Linux (its COMPOSE_SHELL
// variable aside).
var pcDefaultShell = []string{"bash", "-c"}

// ImportProcessCompose translates a process-compose.yaml into a
// supervise.toml, with a warning for every key that has no equivalent.
// A command is run as process-compose runs it, through its shell
// ("bash -c" unless the file's shell says otherwise); an entrypoint is
// run as the argv words it is. process-compose substitutes $VAR and
// ${VAR} in the whole file from its environment and .env when it loads
// it; here a command keeps them for its shell at run time, an
// environment value for supervise's own expansion when it loads, and any
// other value has them fixed at import (each named in a warning).
func ImportProcessCompose(name string, data []byte, opts ProcessComposeOptions) (toml []byte, ws []Warning, err error) {
	if len(data) > maxImportSize {
		return nil, nil, fmt.Errorf("import %s: %w", name, errTooLarge)
	}
	if opts.Lookup == nil {
		opts.Lookup = os.LookupEnv
	}
	var root yaml.Node
	if err := func() (err error) {
		defer func() {
			// yaml.v3 is fuzzed upstream; this keeps a parser bug an error
			if r := recover(); r != nil {
				err = fmt.Errorf("the YAML parser failed: %v", r)
			}
		}()
		return yaml.Unmarshal(data, &root)
	}(); err != nil {
		return nil, nil, fmt.Errorf("import %s: %w", name, err)
	}
	im := &pcImport{file: name, opts: opts, expand: true}
	out, err := im.run(&root)
	if err != nil {
		return nil, nil, fmt.Errorf("import %s:%w", name, err) // err is "LINE: …"
	}
	return out, im.ws, nil
}

type pcImport struct {
	file    string
	opts    ProcessComposeOptions
	ws      warnings
	work    int
	expand  bool              // env substitution is on (disable_env_expansion unset)
	global  map[string]string // the file's environment
	shell   []string
	vars    map[string]string
	procs   []*pcProcess
	headers int // [table] headers written
	merging int // merge keys being followed, nested
	byName  map[string]*pcProcess
}

type pcProcess struct {
	name, toml string
	line       int
	keys       []pcKV
	restart    string // the supervise policy
	instances  int
	dotVars    map[string]string // vars, its own over the file's
}

type pcKV struct {
	key  string
	line int
	v    *yaml.Node
}

// pcErr is an error at a line of the file.
type pcErr struct {
	line int
	msg  string
}

func (e *pcErr) Error() string { return fmt.Sprintf("%d: %s", e.line, e.msg) }

func pcError(line int, format string, args ...any) error {
	return &pcErr{line, fmt.Sprintf(format, args...)}
}

// in names the process an error is about, keeping its line.
func (p *pcProcess) in(err error) error {
	var pe *pcErr
	if errors.As(err, &pe) {
		return &pcErr{pe.line, fmt.Sprintf("process %q: %s", p.name, pe.msg)}
	}
	return pcError(p.line, "process %q: %v", p.name, err)
}

// resolve follows an alias to the node it names.
func (im *pcImport) resolve(n *yaml.Node) (*yaml.Node, error) {
	for depth := 0; n != nil && n.Kind == yaml.AliasNode; depth++ {
		if err := im.spend(1, n.Line); err != nil || depth > 100 {
			return nil, pcError(n.Line, "more than %d nodes reached through aliases", maxAliasWork)
		}
		n = n.Alias
	}
	if n == nil {
		return nil, pcError(0, "an empty alias")
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}, nil
		}
		return im.resolve(n.Content[0])
	}
	return n, nil
}

// spend counts n nodes read against maxAliasWork.
func (im *pcImport) spend(n, line int) error {
	if im.work += n; im.work > maxAliasWork {
		return pcError(line, "more than %d nodes reached through aliases", maxAliasWork)
	}
	return nil
}

// mapping reads a mapping's keys in order, merge keys (<<) applied as
// YAML says: the mapping's own keys win over merged ones. A key written
// twice is an error, as it is to process-compose's YAML reader.
func (im *pcImport) mapping(n *yaml.Node, what string) ([]pcKV, error) {
	n, err := im.resolve(n)
	if err != nil {
		return nil, err
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, pcError(n.Line, "%s: must be a mapping", what)
	}
	if err := im.spend(len(n.Content)/2, n.Line); err != nil {
		return nil, err
	}
	var own, merged []pcKV
	seen := map[string]int{}
	mergedKeys := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := im.resolve(n.Content[i])
		if err != nil {
			return nil, err
		}
		if k.Kind != yaml.ScalarNode {
			return nil, pcError(k.Line, "%s: a key must be a string", what)
		}
		if k.Tag == "!!merge" {
			if err := im.merge(n.Content[i+1], what, &merged, mergedKeys); err != nil {
				return nil, err
			}
			continue
		}
		if at, ok := seen[k.Value]; ok {
			return nil, pcError(k.Line, "%s: key %q is already defined at line %d", what, k.Value, at)
		}
		seen[k.Value] = k.Line
		own = append(own, pcKV{key: k.Value, line: k.Line, v: n.Content[i+1]})
	}
	for _, kv := range merged {
		if _, ok := seen[kv.key]; !ok {
			seen[kv.key] = kv.line
			own = append(own, kv)
		}
	}
	return own, nil
}

// merge adds the keys of a merge key's mapping (or list of them, the
// first winning) to into.
func (im *pcImport) merge(v *yaml.Node, what string, into *[]pcKV, have map[string]bool) error {
	// an anchor may merge itself: without a bound this recursed until the
	// stack overflowed
	if im.merging++; im.merging > maxMergeDepth {
		return pcError(v.Line, "%s: merge keys nested more than %d deep (does an anchor merge itself?)", what, maxMergeDepth)
	}
	defer func() { im.merging-- }()
	v, err := im.resolve(v)
	if err != nil {
		return err
	}
	list := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		list = v.Content
	}
	for _, m := range list {
		kvs, err := im.mapping(m, what)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			if !have[kv.key] {
				have[kv.key] = true
				*into = append(*into, kv)
			}
		}
	}
	return nil
}

// scalar is n's text; null is "".
func (im *pcImport) scalar(n *yaml.Node, what string) (string, int, error) {
	n, err := im.resolve(n)
	if err != nil {
		return "", 0, err
	}
	if n.Kind != yaml.ScalarNode {
		return "", n.Line, pcError(n.Line, "%s: must be a single value, not a list or mapping", what)
	}
	if n.Tag == "!!null" {
		return "", n.Line, nil
	}
	return n.Value, n.Line, nil
}

// list reads a sequence of scalars (a single scalar is a list of one).
func (im *pcImport) list(n *yaml.Node, what string) ([]string, error) {
	n, err := im.resolve(n)
	if err != nil {
		return nil, err
	}
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!null" {
			return nil, nil
		}
		return []string{n.Value}, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, pcError(n.Line, "%s: must be a list", what)
	}
	if err := im.spend(len(n.Content), n.Line); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range n.Content {
		s, _, err := im.scalar(e, what)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (im *pcImport) run(root *yaml.Node) ([]byte, error) {
	if root.Kind == 0 {
		return nil, pcError(1, "an empty file")
	}
	kvs, err := im.mapping(root, "the file")
	if err != nil {
		return nil, err
	}
	im.shell = pcDefaultShell
	im.vars = map[string]string{}
	top, err := im.readTop(kvs)
	if err != nil {
		return nil, err
	}
	if top.procs == nil {
		return nil, pcError(1, "no processes (is it a Docker Compose file?)")
	}
	if err := im.readProcesses(top.procs.v); err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Imported by supervise from the process-compose file %q.\n", im.file)
	if err := im.writeDefaults(&b, top.env); err != nil {
		return nil, err
	}
	for _, p := range im.procs {
		if err := im.write(&b, p); err != nil {
			return nil, err
		}
		if b.Len() > maxImportSize {
			return nil, fmt.Errorf("%d: the supervise.toml written would be %w", p.line, errTooLarge)
		}
		if im.headers > maxImportPrograms {
			return nil, pcError(p.line, "the supervise.toml written would have more than %d tables, the most a config holds", maxImportPrograms)
		}
	}
	return []byte(b.String()), nil
}

// pcTop is what run keeps of the file's top level.
type pcTop struct {
	procs *pcKV
	env   []pcKV
}

// readTop reads the file's top-level keys: disable_env_expansion first,
// as it changes how every value is read, then the others in order.
func (im *pcImport) readTop(kvs []pcKV) (*pcTop, error) {
	top := &pcTop{}
	for _, kv := range kvs {
		if kv.key == "disable_env_expansion" {
			s, _, err := im.scalar(kv.v, kv.key)
			if err != nil {
				return nil, err
			}
			im.expand = !pcTrue(s)
		}
	}
	for i := range kvs {
		kv := &kvs[i]
		if read, ok := pcTopKeys[kv.key]; ok {
			if err := read(im, top, kv); err != nil {
				return nil, err
			}
			continue
		}
		why, ok := pcTopUnmapped[kv.key]
		switch {
		case ok && why == "", strings.HasPrefix(kv.key, "x-"):
			// process-compose's own settings: nothing to run differently
		case ok:
			im.ws.add("", kv.key, "%s", why)
		default:
			im.ws.add("", kv.key, "not imported: no supervise equivalent")
		}
	}
	return top, nil
}

// pcTopKeys read the top-level keys that map to supervise's.
var pcTopKeys = map[string]func(im *pcImport, top *pcTop, kv *pcKV) error{
	"processes":   func(_ *pcImport, top *pcTop, kv *pcKV) error { top.procs = kv; return nil },
	"environment": func(_ *pcImport, top *pcTop, kv *pcKV) error { top.env = append(top.env, *kv); return nil },
	"vars":        func(im *pcImport, _ *pcTop, kv *pcKV) error { return im.readVars(kv.v, im.vars, "") },
	"shell":       func(im *pcImport, _ *pcTop, kv *pcKV) error { return im.readShell(kv.v) },
}

// pcTopUnmapped say why a top-level key is not imported; "" is a
// setting of process-compose's own, taken quietly.
var pcTopUnmapped = map[string]string{
	"version":               "",
	"is_strict":             "",
	"disable_env_expansion": "", // read first
	"is_tui_disabled":       "",
	"ordered_shutdown":      "", // supervise always stops dependents before what they depend on
	"log_location":          pcOwnLog,
	"log_level":             pcOwnLog,
	"log_length":            pcOwnLog,
	"log_configuration":     pcOwnLog,
	"log_format":            pcOwnLog,
	"extends":               "not imported: the file it extends is not read; import that file and merge the two",
	"env_cmds":              "not imported: supervise runs no command to make an environment; set the values in env or an env_file",
}

const pcOwnLog = "not imported: process-compose's own log; supervise's is [supervisor] log_format and log_level, on its stderr"

// writeDefaults writes the [defaults] table: the .env as env_file and the
// file's environment as env.
func (im *pcImport) writeDefaults(b *strings.Builder, env []pcKV) error {
	var defaults []string
	if im.opts.DotEnv != nil {
		defaults = append(defaults, "env_file = ["+tomlQuote(im.opts.DotEnvPath)+"]")
	}
	genv, gvals, err := im.environment(env, "environment", "")
	if err != nil {
		return err
	}
	im.global = gvals
	if len(genv) > 0 {
		defaults = append(defaults, "env = { "+strings.Join(genv, ", ")+" }")
	}
	if len(defaults) > 0 {
		im.headers++
		b.WriteString("\n[defaults]\n" + strings.Join(defaults, "\n") + "\n")
	}
	return nil
}

func pcTrue(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "on", "y", "1":
		return true
	}
	return false
}

// readVars reads a vars mapping into into; values are scalars of any
// type, kept as written (Go's template prints them so).
func (im *pcImport) readVars(n *yaml.Node, into map[string]string, program string) error {
	r, err := im.resolve(n)
	if err != nil {
		return err
	}
	if r.Kind != yaml.MappingNode {
		// process-compose refuses the file; a list of name/value pairs is
		// seen in the wild
		im.ws.add(program, "vars", "not imported: not a mapping of NAME: value, so no {{.NAME}} is replaced")
		return nil
	}
	kvs, err := im.mapping(r, "vars")
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		v, _, err := im.scalar(kv.v, "vars."+kv.key)
		if err != nil {
			return err
		}
		into[kv.key] = v
	}
	return nil
}

func (im *pcImport) readShell(n *yaml.Node) error {
	kvs, err := im.mapping(n, "shell")
	if err != nil {
		return err
	}
	sh := []string{pcDefaultShell[0], pcDefaultShell[1]}
	for _, kv := range kvs {
		s, _, err := im.scalar(kv.v, "shell."+kv.key)
		if err != nil {
			return err
		}
		switch kv.key {
		case "shell_command":
			if s != "" {
				sh[0] = s
			}
		case "shell_argument":
			sh[1] = s
		case "elevated_shell_command", "elevated_shell_argument":
			im.ws.add("", "shell."+kv.key, "not imported: supervise runs no program elevated (run it as root, or set user)")
		default:
			im.ws.add("", "shell."+kv.key, "not imported: no supervise equivalent")
		}
	}
	im.shell = sh
	return nil
}

func (im *pcImport) readProcesses(n *yaml.Node) error {
	kvs, err := im.mapping(n, "processes")
	if err != nil {
		return err
	}
	im.byName = map[string]*pcProcess{}
	used := map[string]bool{}
	for _, kv := range kvs {
		t := NamePart(kv.key)
		switch {
		case !programNameRE().MatchString(t):
			im.ws.add(kv.key, "name", "not imported: %q cannot name a supervise program (1-63 letters, digits, '_', '-' or '.', starting with a letter or digit)", kv.key)
			continue
		case used[t]:
			im.ws.add(kv.key, "name", "not imported: a process before it is already named %s", t)
			continue
		case t != kv.key:
			im.ws.add(kv.key, "name", "renamed to %s: supervise names take letters, digits, '_', '-' and '.'", t)
		}
		if len(im.procs) >= maxImportPrograms {
			return pcError(kv.line, "more than %d processes, the most a supervise config holds", maxImportPrograms)
		}
		used[t] = true
		keys, err := im.mapping(kv.v, "process "+kv.key)
		if err != nil {
			return err
		}
		p := &pcProcess{name: kv.key, toml: t, line: kv.line, keys: keys, restart: "never", instances: 1, dotVars: map[string]string{}}
		for k, v := range im.vars {
			p.dotVars[k] = v
		}
		for _, k := range keys {
			switch k.key {
			case "vars":
				if err := im.readVars(k.v, p.dotVars, p.name); err != nil {
					return err
				}
			case "replicas":
				n, err := im.count(p, k)
				if err != nil {
					return err
				}
				if n > 1 {
					p.instances = n
				}
			case "availability":
				if p.restart, err = im.restartOf(p, k); err != nil {
					return err
				}
			}
		}
		im.procs = append(im.procs, p)
		im.byName[kv.key] = p
	}
	if len(im.procs) == 0 {
		return pcError(1, "no process supervise can take")
	}
	return nil
}

// count reads a non-negative integer (after the file's substitution).
func (im *pcImport) count(p *pcProcess, k pcKV) (int, error) {
	s, line, err := im.scalar(k.v, k.key)
	if err != nil {
		return 0, err
	}
	s = im.fixed(p, k.key, s)
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > 1<<20 {
		return 0, pcError(line, "process %q: %s: %q is not a count", p.name, k.key, s)
	}
	return n, nil
}

func (im *pcImport) restartOf(p *pcProcess, k pcKV) (string, error) {
	kvs, err := im.mapping(k.v, "availability")
	if err != nil {
		return "", err
	}
	for _, kv := range kvs {
		if kv.key != "restart" {
			continue
		}
		s, _, err := im.scalar(kv.v, "availability.restart")
		if err != nil {
			return "", err
		}
		// substituted quietly: availability warns of it when written
		s, _ = pcSubst(s, "$", func(r pcRef) string { return r.value(im.lookup) })
		if !im.expand {
			s, _, _ = im.scalar(kv.v, "availability.restart")
		}
		switch s {
		case "always":
			return "always", nil
		case "on_failure":
			return "on-failure", nil
		}
	}
	return "never", nil
}

// prog is one program's TOML being written.
type prog struct {
	im     *pcImport
	p      *pcProcess
	b      strings.Builder // its keys
	tables strings.Builder // its sub-tables, after the keys
}

func (w *prog) warn(key, format string, args ...any) { w.im.ws.add(w.p.name, key, format, args...) }

func (w *prog) set(key, value string) { fmt.Fprintf(&w.b, "%s = %s\n", key, value) }

func (im *pcImport) write(b *strings.Builder, p *pcProcess) error {
	w := &prog{im: im, p: p}
	if d, ok, err := w.scalarKey("description"); err != nil {
		return err
	} else if ok && d != "" {
		fmt.Fprintf(b, "\n# %s", tomlQuote(w.template("description", im.fixed(p, "description", d), false)))
	}
	im.headers++
	fmt.Fprintf(b, "\n[program.%s]\n", tomlKey(p.toml))
	for _, step := range []func() error{w.command, w.workingDir, w.environment, w.disabled} {
		if err := step(); err != nil {
			return err
		}
	}
	w.set("restart", tomlQuote(p.restart))
	for _, k := range p.keys {
		if pcReadByWrite[k.key] {
			continue
		}
		if err := w.key(k); err != nil {
			var pe *pcErr
			if errors.As(err, &pe) {
				return p.in(err)
			}
			return p.in(pcError(k.line, "%s: %v", k.key, err))
		}
	}
	b.WriteString(w.b.String())
	b.WriteString(w.tables.String())
	return nil
}

// pcReadByWrite are the process keys pcImport.write reads itself, before
// the others (see key).
var pcReadByWrite = map[string]bool{"command": true, "entrypoint": true, "working_dir": true, "environment": true,
	"description": true, "disabled": true, "vars": true, "replicas": true}

// keyKV is the process's key, if it has it.
func (w *prog) keyKV(key string) (pcKV, bool) {
	for _, k := range w.p.keys {
		if k.key == key {
			return k, true
		}
	}
	return pcKV{}, false
}

// scalarKey is the value of the process's key, if it has it.
func (w *prog) scalarKey(key string) (string, bool, error) {
	k, ok := w.keyKV(key)
	if !ok {
		return "", false, nil
	}
	s, _, err := w.im.scalar(k.v, key)
	if err != nil {
		return "", false, w.p.in(err)
	}
	return s, true, nil
}

// command writes the command: entrypoint as an argv when there is no
// command, else command through the shell, as process-compose runs them.
func (w *prog) command() error {
	im, p := w.im, w.p
	cmd, hasCmd, err := w.scalarKey("command")
	if err != nil {
		return err
	}
	k, ok := w.keyKV("entrypoint")
	if ok && (!hasCmd || cmd == "") {
		argv, err := im.list(k.v, "entrypoint")
		if err != nil {
			return p.in(err)
		}
		if len(argv) == 0 || argv[0] == "" {
			return pcError(k.line, "process %q: entrypoint: no program to run", p.name)
		}
		for i := range argv {
			argv[i] = im.fixed(p, "entrypoint", argv[i])
		}
		w.set("command", tomlArray(argv))
		return nil
	}
	if ok {
		w.warn("entrypoint", "not imported: command is set, and process-compose runs the command")
	}
	if strings.TrimSpace(cmd) == "" {
		return pcError(p.line, "process %q: no command", p.name)
	}
	w.set("command", tomlArray(w.shellCommand("command", cmd)))
	return nil
}

func (w *prog) workingDir() error {
	s, ok, err := w.scalarKey("working_dir")
	if ok && s != "" {
		w.set("dir", tomlQuote(w.template("working_dir", w.im.fixed(w.p, "working_dir", s), false)))
	}
	return err
}

// environment writes the env table: environment=, then process-compose's
// own variables where the file does not set them.
func (w *prog) environment() error {
	im, p := w.im, w.p
	var envKVs []pcKV
	if k, ok := w.keyKV("environment"); ok {
		envKVs = append(envKVs, k)
	}
	env, vals, err := im.environment(envKVs, "environment", p.name)
	if err != nil {
		return p.in(err)
	}
	set := func(k string) bool { _, own := vals[k]; _, global := im.global[k]; return own || global }
	if !set("PC_PROC_NAME") {
		env = append(env, "PC_PROC_NAME = "+tomlQuote(strings.ReplaceAll(p.name, "$", "$$")))
	}
	if p.instances == 1 && !set("PC_REPLICA_NUM") {
		env = append(env, `PC_REPLICA_NUM = "0"`)
	} else if p.instances > 1 {
		w.warn("replicas", "each instance gets SUPERVISE_INSTANCE (0 … %d) where process-compose set PC_REPLICA_NUM", p.instances-1)
		w.set("instances", strconv.Itoa(p.instances))
	}
	w.set("env", "{ "+strings.Join(env, ", ")+" }")
	return nil
}

func (w *prog) disabled() error {
	s, ok, err := w.scalarKey("disabled")
	if ok && pcTrue(w.im.fixed(w.p, "disabled", s)) {
		w.set("autostart", "false")
	}
	return err
}

// key writes one process key, or warns.
func (w *prog) key(k pcKV) error {
	if write, ok := pcProcessKeys[k.key]; ok {
		return write(w, k)
	}
	u, ok := pcUnmappedKeys[k.key]
	switch {
	case ok && u.ifTrue:
		if s, _, err := w.im.scalar(k.v, k.key); err == nil && pcTrue(s) {
			w.warn(k.key, "%s", u.why)
		}
	case ok:
		w.warn(k.key, "%s", u.why)
	case strings.HasPrefix(k.key, "x-"):
		// an extension key, which process-compose ignores too
	default:
		w.warn(k.key, "not imported: no supervise equivalent")
	}
	return nil
}

// pcProcessKeys write the process keys that map to supervise's, but for
// those pcImport.write reads itself.
var pcProcessKeys = map[string]func(w *prog, k pcKV) error{
	"availability":      (*prog).availability,
	"depends_on":        (*prog).dependsOn,
	"shutdown":          (*prog).shutdown,
	"readiness_probe":   func(w *prog, k pcKV) error { return w.probe(k, "readiness") },
	"liveness_probe":    func(w *prog, k pcKV) error { return w.probe(k, "liveness") },
	"ready_log_line":    (*prog).readyLogLine,
	"log_location":      (*prog).logLocation,
	"log_configuration": (*prog).logConfigurationKey,
}

// pcUnmappedKeys say why a process key has no supervise equivalent;
// with ifTrue, only when its value is true.
var pcUnmappedKeys = map[string]struct {
	why    string
	ifTrue bool
}{
	"namespace":              {why: "not imported: supervise has no namespaces; every program is started and named on its own"},
	"is_daemon":              {ifTrue: true, why: "supervise supervises the process it starts: a command that forks into the background and exits is seen as completed; run the program in the foreground"},
	"is_foreground":          {ifTrue: true, why: pcNoTerminal},
	"is_tty":                 {ifTrue: true, why: pcNoTerminal},
	"is_interactive":         {ifTrue: true, why: pcNoTerminal},
	"is_elevated":            {ifTrue: true, why: "not imported: supervise does not sudo; a program runs as supervise's user, or as user when supervise is root"},
	"disable_ansi_colors":    {why: "not imported: supervise passes a program's output on as it comes"},
	"launch_timeout_seconds": {why: "not imported: it is for daemons (is_daemon), which supervise does not follow"},
}

const pcNoTerminal = "not imported: supervise gives a program no terminal; its output is read through pipes"

func (w *prog) readyLogLine(k pcKV) error {
	s, _, err := w.im.scalar(k.v, k.key)
	if err != nil {
		return err
	}
	if _, ok := w.keyNode("readiness_probe"); ok {
		w.warn(k.key, "not imported: a program has one readiness check, and the readiness_probe is kept")
		return nil
	}
	if s = w.im.fixed(w.p, k.key, s); s != "" {
		// process-compose looks for the text anywhere in a line
		w.set("ready_log_line", tomlQuote(regexp.QuoteMeta(s)))
	}
	return nil
}

func (w *prog) logLocation(k pcKV) error {
	s, _, err := w.im.scalar(k.v, k.key)
	if err != nil {
		return err
	}
	s = w.template(k.key, w.im.fixed(w.p, k.key, s), false)
	if s == "" {
		return nil
	}
	if w.p.instances > 1 {
		w.warn(k.key, "the instances share one file (written line by line); process-compose wrote one per replica")
	}
	rot, err := w.logConfiguration()
	if err != nil {
		return err
	}
	// process-compose writes both streams to the file: one pipe for both
	// keeps them in the order written
	w.set("stdout", "{ file = "+tomlQuote(s)+rot+" }")
	w.set("stderr", `"stdout"`)
	return nil
}

// logConfigurationKey warns of a log_configuration without a file;
// logLocation reads it.
func (w *prog) logConfigurationKey(k pcKV) error {
	if _, ok := w.keyNode("log_location"); !ok {
		w.warn(k.key, "not imported: without log_location there is no file to configure")
	}
	return nil
}

func (w *prog) keyNode(key string) (*yaml.Node, bool) {
	k, ok := w.keyKV(key)
	return k.v, ok
}

// logConfiguration is the rotation part of the file's settings, as
// ", max_size = …" for the stdout and stderr tables.
func (w *prog) logConfiguration() (string, error) {
	n, ok := w.keyNode("log_configuration")
	if !ok {
		return "", nil
	}
	kvs, err := w.im.mapping(n, "log_configuration")
	if err != nil {
		return "", err
	}
	var out string
	for _, kv := range kvs {
		key := "log_configuration." + kv.key
		switch kv.key {
		case "rotation":
			rot, err := w.im.mapping(kv.v, key)
			if err != nil {
				return "", err
			}
			for _, r := range rot {
				s, _, err := w.im.scalar(r.v, key+"."+r.key)
				if err != nil {
					return "", err
				}
				n, err := strconv.Atoi(strings.TrimSpace(s))
				switch {
				case r.key == "max_size_mb" && err == nil && n > 0 && n <= 1<<20:
					out += fmt.Sprintf(", max_size = \"%dMiB\"", n) // lumberjack's megabytes are MiB
				case r.key == "max_backups" && err == nil && n > 0 && n <= 1000:
					out += fmt.Sprintf(", max_files = %d", n)
				default:
					w.warn(key+"."+r.key, "not imported: supervise rotates by size (max_size) and keeps max_files files, uncompressed")
				}
			}
		case "add_timestamp":
			if s, _, err := w.im.scalar(kv.v, key); err == nil && pcTrue(s) {
				out += ", timestamps = true"
			}
		default:
			w.warn(key, "not imported: supervise writes a program's bytes as they came (timestamps = true starts each line with the time)")
		}
	}
	return out, nil
}

func (w *prog) availability(k pcKV) error {
	kvs, err := w.im.mapping(k.v, k.key)
	if err != nil {
		return err
	}
	restarts := w.p.restart != "never"
	backoff := 1
	for _, kv := range kvs {
		key := "availability." + kv.key
		s, _, err := w.im.scalar(kv.v, key)
		if err != nil {
			return err
		}
		s = w.im.fixed(w.p, key, s)
		switch kv.key {
		case "restart":
			switch s {
			case "always", "on_failure", "no", "":
			case "exit_on_failure":
				w.warn(key, "exit_on_failure becomes restart = \"never\": a failure does not stop the others (critical = true would end everything when it ends, whatever its status)")
			default:
				w.warn(key, "%q is not one of process-compose's policies (always, on_failure, exit_on_failure, no); it never restarts, as there", s)
			}
		case "backoff_seconds":
			if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > backoff {
				backoff = min(n, 3600)
			}
		case "max_restarts":
			if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > 0 && restarts {
				w.warn(key, "not imported: supervise restarts without a limit, waiting by its backoff")
			}
		case "exit_on_end":
			if pcTrue(s) {
				w.set("critical", "true")
			}
		case "exit_on_skipped":
			if pcTrue(s) {
				w.warn(key, "not imported: a program whose dependency fails waits (Waiting) rather than being skipped")
			}
		default:
			w.warn(key, "not imported: no supervise equivalent")
		}
	}
	if restarts {
		// process-compose waits the same time before every restart
		d := strconv.Quote(strconv.Itoa(backoff) + "s")
		w.set("backoff", "{ initial = "+d+", max = "+d+" }")
	}
	return nil
}

// pcConditions are process-compose's depends_on conditions in supervise's.
var pcConditions = map[string]string{
	"":                               config.DependRunning,
	"process_started":                config.DependRunning,
	"process_healthy":                config.DependReady,
	"process_log_ready":              config.DependReady,
	"process_completed_successfully": config.DependCompleted,
	"process_completed":              config.DependCompleted,
}

func (w *prog) dependsOn(k pcKV) error {
	kvs, err := w.im.mapping(k.v, k.key)
	if err != nil {
		return err
	}
	var parts []string
	for _, kv := range kvs {
		key := "depends_on." + kv.key
		dep, ok := w.im.byName[kv.key]
		if !ok {
			w.warn(key, "not imported: no process %q was imported", kv.key)
			continue
		}
		cond := ""
		v, err := w.im.resolve(kv.v)
		if err != nil {
			return err
		}
		if v.Kind == yaml.ScalarNode {
			cond = v.Value // the short form, name: condition
		} else {
			ckvs, err := w.im.mapping(v, key)
			if err != nil {
				return err
			}
			for _, c := range ckvs {
				if c.key != "condition" {
					w.warn(key+"."+c.key, "not imported: no supervise equivalent")
					continue
				}
				if cond, _, err = w.im.scalar(c.v, key+".condition"); err != nil {
					return err
				}
			}
		}
		to, ok := pcConditions[cond]
		switch {
		case !ok:
			w.warn(key, "condition %q is not process-compose's; it waits for %s to run", cond, dep.toml)
			to = config.DependRunning
		case to == config.DependCompleted && dep.restart == "always":
			w.warn(key, "%s restarts always and never completes: it waits for it to run instead", dep.toml)
			to = config.DependRunning
		case cond == "process_completed":
			w.warn(key, "process_completed becomes completed, which is a successful exit: a failing %s leaves it waiting", dep.toml)
		}
		parts = append(parts, tomlKey(dep.toml)+" = "+tomlQuote(to))
	}
	if len(parts) > 0 {
		w.set("depends_on", "{ "+strings.Join(parts, ", ")+" }")
	}
	return nil
}

func (w *prog) shutdown(k pcKV) error {
	kvs, err := w.im.mapping(k.v, k.key)
	if err != nil {
		return err
	}
	timeout, command := 0, ""
	for _, kv := range kvs {
		key := "shutdown." + kv.key
		s, line, err := w.im.scalar(kv.v, key)
		if err != nil {
			return err
		}
		switch kv.key {
		case "command":
			command = s
		case "signal":
			s = w.im.fixed(w.p, key, s)
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 || n > 31 {
				return pcError(line, "%q is not a signal number (1-31)", s)
			}
			w.set("stop_signal", strconv.Itoa(n))
		case "timeout_seconds":
			s = w.im.fixed(w.p, key, s)
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 0 {
				return pcError(line, "%q is not a number of seconds", s)
			}
			if n > 0 {
				timeout = min(n, 86400)
				w.set("stop_timeout", strconv.Quote(strconv.Itoa(timeout)+"s"))
			}
		case "parent_only":
			if pcTrue(s) {
				w.warn(key, "not imported: supervise signals the program's whole process group")
			}
		default:
			w.warn(key, "not imported: no supervise equivalent")
		}
	}
	if strings.TrimSpace(command) != "" {
		if timeout == 0 {
			timeout = 10 // process-compose's default wait for the command
		}
		w.warn("shutdown.command", "runs as the pre_stop hook; supervise then sends stop_signal to what is left, where process-compose sent no signal after its command")
		w.im.headers++
		fmt.Fprintf(&w.tables, "\n[program.%s.hooks.pre_stop]\ncommand = %s\ntimeout = %s\n",
			tomlKey(w.p.toml), tomlArray(w.shellCommand("shutdown.command", command)), strconv.Quote(strconv.Itoa(timeout)+"s"))
	}
	return nil
}

func (w *prog) probe(k pcKV, kind string) error {
	kvs, err := w.im.mapping(k.v, k.key)
	if err != nil {
		return err
	}
	var check string
	var timing []string
	for _, kv := range kvs {
		key := k.key + "." + kv.key
		var c, t string
		switch _, isTiming := pcProbeTimings[kv.key]; {
		case kv.key == "exec":
			c, err = w.probeExec(kv, key)
		case kv.key == "http_get":
			if c, err = w.httpGet(kv, key); c != "" {
				c = "http = " + c
			}
		case isTiming:
			t, err = w.probeTiming(kv, key, kind)
		default:
			w.warn(key, "not imported: supervise probes are a command, an http GET or a tcp connect")
		}
		if err != nil {
			return err
		}
		if c != "" {
			check = c
		}
		if t != "" {
			timing = append(timing, t)
		}
	}
	if check == "" {
		w.warn(k.key, "not imported: neither an exec command nor an http_get supervise can send")
		return nil
	}
	if kind == "readiness" {
		w.warn(k.key, "failing, it marks the program not ready and does not restart it, where process-compose restarted it by its availability: add a liveness_probe for that")
	} else {
		w.warn(k.key, "failing, it restarts the program (counted as a crash), where process-compose acted on it only for a daemon (is_daemon)")
	}
	w.im.headers++
	fmt.Fprintf(&w.tables, "\n[program.%s.probes.%s]\n%s\n", tomlKey(w.p.toml), kind, check)
	for _, t := range timing {
		w.tables.WriteString(t + "\n")
	}
	return nil
}

// probeExec is an exec probe's command line, or "" when it has none.
func (w *prog) probeExec(kv pcKV, key string) (string, error) {
	ekvs, err := w.im.mapping(kv.v, key)
	if err != nil {
		return "", err
	}
	var check string
	for _, e := range ekvs {
		s, _, err := w.im.scalar(e.v, key+"."+e.key)
		if err != nil {
			return "", err
		}
		switch e.key {
		case "command":
			if strings.TrimSpace(s) != "" {
				check = "command = " + tomlArray(w.shellCommand(key+".command", s))
			}
		case "working_dir":
			w.warn(key+"."+e.key, "not imported: a probe command runs in the program's dir")
		default:
			w.warn(key+"."+e.key, "not imported: no supervise equivalent")
		}
	}
	return check, nil
}

// pcProbeTimings are a probe's timing keys as lines of supervise's probe
// table. Below min, process-compose takes its default, which is the
// kubelet's and so supervise's: nothing is written.
var pcProbeTimings = map[string]struct {
	min    int
	format string
}{
	"initial_delay_seconds": {1, `initial_delay = "%ds"`},
	"period_seconds":        {1, `period = "%ds"`},
	"timeout_seconds":       {1, `timeout = "%ds"`},
	"success_threshold":     {2, "success_threshold = %d"},
	"failure_threshold":     {1, "failure_threshold = %d"},
}

// probeTiming is the line a timing key writes, or "".
func (w *prog) probeTiming(kv pcKV, key, kind string) (string, error) {
	s, line, err := w.im.scalar(kv.v, key)
	if err != nil {
		return "", err
	}
	s = w.im.fixed(w.p, key, s)
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return "", pcError(line, "%q is not a number", s)
	}
	n = min(n, 86400)
	t := pcProbeTimings[kv.key]
	switch {
	case n < t.min:
		return "", nil
	case kv.key == "success_threshold" && kind == "liveness":
		w.warn(key, "not imported: a liveness probe passes on one success")
		return "", nil
	}
	return fmt.Sprintf(t.format, n), nil
}

// pcHTTPGet is an http_get probe being read.
type pcHTTPGet struct {
	host, scheme, path, port string
	status                   int
	headers                  []string // TOML key = value pairs
}

// httpGet is an http_get probe as supervise's http table, or "" (with a
// warning) when it cannot be one.
func (w *prog) httpGet(k pcKV, key string) (string, error) {
	kvs, err := w.im.mapping(k.v, key)
	if err != nil {
		return "", err
	}
	g := &pcHTTPGet{host: "127.0.0.1", scheme: "http", path: "/", status: 200}
	for _, kv := range kvs {
		hk := key + "." + kv.key
		if kv.key == "headers" {
			if err := w.httpHeaders(g, kv, hk); err != nil {
				return "", err
			}
			continue
		}
		s, _, err := w.im.scalar(kv.v, hk)
		if err != nil {
			return "", err
		}
		s = strings.TrimSpace(w.template(hk, w.im.fixed(w.p, hk, s), false))
		if !g.set(kv.key, s) {
			w.warn(hk, "not imported: no supervise equivalent")
		}
	}
	u := g.url(w, key)
	if u == "" {
		return "", nil
	}
	out := "{ url = " + tomlQuote(u)
	if len(g.headers) > 0 {
		out += ", headers = { " + strings.Join(g.headers, ", ") + " }"
	}
	// process-compose passes exactly this status (200 by default),
	// where supervise would pass any 2xx or 3xx
	return out + fmt.Sprintf(", expect_status = %d }", g.status), nil
}

// httpHeaders reads http_get's headers, each a list of values joined as
// one header.
func (w *prog) httpHeaders(g *pcHTTPGet, kv pcKV, hk string) error {
	hkvs, err := w.im.mapping(kv.v, hk)
	if err != nil {
		return err
	}
	for _, h := range hkvs {
		vals, err := w.im.list(h.v, hk+"."+h.key)
		if err != nil {
			return err
		}
		for i := range vals {
			vals[i] = w.im.fixed(w.p, hk, vals[i])
		}
		g.headers = append(g.headers, tomlKey(h.key)+" = "+tomlQuote(strings.Join(vals, ", ")))
	}
	return nil
}

// set takes the value of one of http_get's keys, or says it has none.
func (g *pcHTTPGet) set(key, s string) bool {
	switch key {
	case "host":
		g.host = cmp.Or(s, g.host)
	case "scheme":
		g.scheme = cmp.Or(strings.ToLower(s), g.scheme)
	case "path":
		g.path = cmp.Or(s, g.path)
	case "port", "num_port":
		g.port = s
	case "status_code":
		if n, err := strconv.Atoi(s); err == nil && n >= 100 && n <= 400 {
			g.status = n // past 400, process-compose takes 200
		}
	default:
		return false
	}
	return true
}

// url is the probe's URL, or "" (with a warning) when supervise cannot
// send it.
func (g *pcHTTPGet) url(w *prog, key string) string {
	hostport := g.host
	if n, err := strconv.Atoi(g.port); err == nil && n >= 1 && n <= 65535 {
		hostport = net.JoinHostPort(g.host, g.port)
	} else if g.port != "" {
		w.warn(key+".port", "%q is not a port: the URL has none, as process-compose's", g.port)
	} else if strings.Contains(g.host, ":") {
		hostport = "[" + g.host + "]"
	}
	path := g.path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := g.scheme + "://" + hostport + path
	if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		w.warn(key, "not imported: %q is not an http:// or https:// URL", u)
		return ""
	}
	return u
}

// environment reads environment lists ("K=V", or a K: V mapping) into
// TOML key = value pairs, in order, a later key replacing an earlier.
func (im *pcImport) environment(kvs []pcKV, key, program string) ([]string, map[string]string, error) {
	var order []string
	vals := map[string]string{}
	for _, k := range kvs {
		n, err := im.resolve(k.v)
		if err != nil {
			return nil, nil, err
		}
		var pairs [][2]string
		if n.Kind == yaml.MappingNode {
			m, err := im.mapping(n, key)
			if err != nil {
				return nil, nil, err
			}
			for _, kv := range m {
				s, _, err := im.scalar(kv.v, key+"."+kv.key)
				if err != nil {
					return nil, nil, err
				}
				pairs = append(pairs, [2]string{kv.key, s})
			}
		} else {
			items, err := im.list(n, key)
			if err != nil {
				return nil, nil, err
			}
			for _, it := range items {
				name, v, ok := strings.Cut(it, "=")
				if !ok || name == "" {
					im.ws.add(program, key, "not imported: %q is not NAME=value", it)
					continue
				}
				pairs = append(pairs, [2]string{name, v})
			}
		}
		for _, kv := range pairs {
			if strings.ContainsRune(kv[0], 0) || strings.ContainsRune(kv[1], 0) {
				return nil, nil, pcError(k.line, "%s: a NUL byte", key)
			}
			if _, ok := vals[kv[0]]; !ok {
				order = append(order, kv[0])
			}
			vals[kv[0]] = im.envValue(program, key+" "+kv[0], kv[1])
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, tomlKey(k)+" = "+tomlQuote(vals[k]))
	}
	return out, vals, nil
}

// pcRef is one of process-compose's substitutions: $NAME, ${NAME},
// ${NAME:-default} or ${NAME-default}.
type pcRef struct {
	raw, name, def string
	hasDef, colon  bool
}

var pcNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`) })

// pcSubst walks s as process-compose's substitution does: $$ is a $
// (dollar), each reference is replaced by ref, and a $ before anything
// else stays. It returns the references that have a form supervise
// cannot write (other ${…} operators), which are kept as written.
func pcSubst(s, dollar string, ref func(pcRef) string) (string, []string) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	var odd []string
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			if c == '$' {
				b.WriteString(dollar)
			} else {
				b.WriteByte(c)
			}
			continue
		}
		rest := s[i+1:]
		switch {
		case rest[0] == '$':
			b.WriteString(dollar)
			i++
		case rest[0] == '{':
			end := strings.IndexByte(rest, '}')
			name := pcNameRE().FindString(rest[1:])
			if end < 0 || name == "" {
				b.WriteString(dollar)
				continue
			}
			r := pcRef{raw: s[i : i+2+end], name: name}
			op := rest[1+len(name) : end]
			switch {
			case op == "":
			case strings.HasPrefix(op, ":-") && !strings.ContainsAny(op, "${"):
				r.def, r.hasDef, r.colon = op[2:], true, true
			case strings.HasPrefix(op, "-") && !strings.ContainsAny(op, "${"):
				r.def, r.hasDef = op[1:], true
			default:
				odd = append(odd, r.raw)
				b.WriteString(strings.ReplaceAll(r.raw, "$", dollar))
				i += 1 + end
				continue
			}
			b.WriteString(ref(r))
			i += 1 + end
		default:
			name := pcNameRE().FindString(rest)
			if name == "" {
				b.WriteString(dollar)
				continue
			}
			b.WriteString(ref(pcRef{raw: "$" + name, name: name}))
			i += len(name)
		}
	}
	return b.String(), odd
}

// lookup is a variable as process-compose substitutes it: its .env
// first, then its environment.
func (im *pcImport) lookup(name string) (string, bool) {
	if v, ok := im.opts.DotEnv[name]; ok {
		return v, true
	}
	return im.opts.Lookup(name)
}

func (r pcRef) value(look func(string) (string, bool)) string {
	v, ok := look(r.name)
	if r.hasDef && (!ok || (r.colon && v == "")) {
		return r.def
	}
	return v
}

// fixed substitutes s as process-compose did when it loaded the file, for
// a value supervise takes literally: the variables' values now are
// written, each named in a warning.
func (im *pcImport) fixed(p *pcProcess, key, s string) string {
	if !im.expand {
		return s
	}
	var names []string
	out, odd := pcSubst(s, "$", func(r pcRef) string {
		names = append(names, r.raw)
		return r.value(im.lookup)
	})
	prog := ""
	if p != nil {
		prog = p.name
	}
	if len(names) > 0 {
		im.ws.add(prog, key, "%s fixed at import, to %q (process-compose substituted it when it loaded the file)", strings.Join(names, ", "), out)
	}
	if len(odd) > 0 {
		im.ws.add(prog, key, "%s kept as written: supervise has no such substitution", strings.Join(odd, ", "))
	}
	return out
}

// envValue writes an environment value for supervise's own expansion,
// which, like process-compose's, happens when the file is loaded, from
// the supervisor's environment: $NAME becomes ${NAME}. A variable of the
// .env is fixed at import, as supervise expands from its environment only.
func (im *pcImport) envValue(program, key, s string) string {
	if !im.expand {
		return strings.ReplaceAll(s, "$", "$$")
	}
	var fixed []string
	out, odd := pcSubst(s, "$$", func(r pcRef) string {
		if _, ok := im.opts.DotEnv[r.name]; ok || (r.hasDef && !r.colon) {
			fixed = append(fixed, r.raw)
			return strings.ReplaceAll(r.value(im.lookup), "$", "$$")
		}
		if r.hasDef {
			if strings.Contains(r.def, "}") {
				fixed = append(fixed, r.raw)
				return strings.ReplaceAll(r.value(im.lookup), "$", "$$")
			}
			return "${" + r.name + ":-" + r.def + "}"
		}
		return "${" + r.name + "}"
	})
	if len(fixed) > 0 {
		im.ws.add(program, key, "%s fixed at import to the value now (from the .env, which supervise does not expand from)", strings.Join(fixed, ", "))
	}
	if len(odd) > 0 {
		im.ws.add(program, key, "%s kept as written: supervise has no such substitution", strings.Join(odd, ", "))
	}
	return out
}

// shellCommand is a command line as process-compose runs it: its shell,
// with the line after process-compose's substitution. A $VAR is left to
// the shell, which finds it at run time in the program's environment
// (supervise's, the .env, env): where the file's environment sets it,
// process-compose had put its own environment's value instead, so that is
// warned.
func (w *prog) shellCommand(key, s string) []string {
	im := w.im
	if im.expand {
		own := map[string]bool{}
		for k := range im.global {
			own[k] = true
		}
		for _, k := range w.p.keys {
			if k.key == "environment" {
				if items, err := im.list(k.v, k.key); err == nil {
					for _, it := range items {
						n, _, _ := strings.Cut(it, "=")
						own[n] = true
					}
				}
			}
		}
		var differ []string
		s, _ = pcSubst(s, "$", func(r pcRef) string {
			if own[r.name] {
				differ = append(differ, r.raw)
			}
			return r.raw
		})
		if len(differ) > 0 {
			w.warn(key, "%s is now expanded by the shell from the program's environment, which sets it, where process-compose substituted its own environment's value when it loaded the file", strings.Join(differ, ", "))
		}
	}
	s = w.template(key, s, true)
	return append(append([]string{}, im.shell...), s)
}

var pcTemplateVarRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^-?\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*-?$`)
})

// template replaces process-compose's {{.NAME}} from vars, and
// {{.PC_REPLICA_NUM}} (for a shell: ${SUPERVISE_INSTANCE} with
// instances); any other Go template action is kept and warned.
func (w *prog) template(key, s string, shell bool) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	var b strings.Builder
	var kept []string
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			break
		}
		j := actionEnd(s[i+2:])
		if j < 0 {
			kept = append(kept, s[i:])
			break
		}
		action := s[i+2 : i+2+j]
		b.WriteString(s[:i])
		s = s[i+4+j:]
		inner := strings.TrimSpace(action)
		if m := pcTemplateVarRE().FindStringSubmatch(inner); m != nil {
			if v, ok := w.p.dotVars[m[1]]; ok {
				b.WriteString(v)
				continue
			}
			if m[1] == "PC_REPLICA_NUM" {
				switch {
				case w.p.instances == 1:
					b.WriteString("0")
					continue
				case shell:
					b.WriteString("${SUPERVISE_INSTANCE}")
					continue
				}
			}
		} else if u, err := strconv.Unquote(inner); err == nil && (strings.HasPrefix(inner, `"`) || strings.HasPrefix(inner, "`")) {
			b.WriteString(u) // {{ "{{.x}}" }}: a template's way to write {{
			continue
		}
		kept = append(kept, "{{"+action+"}}")
		b.WriteString("{{" + action + "}}")
	}
	b.WriteString(s)
	if len(kept) > 0 {
		w.warn(key, "%s kept as written: only {{.NAME}} of vars is replaced", strings.Join(kept, " "))
	}
	return b.String()
}

// actionEnd is where the "}}" closing a template action starts, past any
// quoted string in it (where "}}" is text), or -1.
func actionEnd(s string) int {
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '`':
			quote = c
		case c == '}' && i+1 < len(s) && s[i+1] == '}':
			return i
		}
	}
	return -1
}

func tomlArray(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = tomlQuote(w)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
