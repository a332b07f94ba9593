package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/supervise-dev/supervise/internal/smallfile"
)

// Load reads and validates the file at path: a Procfile when its base name
// is "Procfile" or starts with "Procfile." (then a ".env" beside it, if any,
// is loaded too), TOML otherwise. A file that cannot be read gives a wrapped
// I/O error; a file that is wrong gives an ErrorList naming every problem.
func Load(path string) (*Config, error) {
	return LoadWithOptions(path, ProcfileOptions{})
}

// LoadWithOptions is Load with the dev-runner options of a Procfile run
// (a formation from `supervise -m web=2,worker=1`, ports, restart policy).
// The ".env" beside a Procfile is read first and opts.Env laid over it;
// its path is each program's EnvFiles, for a reload to watch. A TOML file
// takes no options: any non-zero opts make an ErrorList saying so.
func LoadWithOptions(path string, opts ProcfileOptions) (*Config, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	procfile, why := fileFormat(path, data)
	if !procfile {
		t, err := readProcfileTable(path, data)
		if err != nil {
			return nil, err
		}
		if t == nil {
			if !opts.isZero() {
				return nil, ErrorList{{File: path, Msg: "Procfile options (formation, ports, restart, keep running, watch) apply to a Procfile only (or a [procfile] table); set instances and env in the TOML file"}}
			}
			cfg, err := Parse(path, data)
			if err != nil && !validTOML(path, data) {
				err = triedAs(err, "TOML", why)
			}
			return cfg, err
		}
		// A [procfile] table: its Procfile's processes, with its settings
		// under the flags. A reload reads this file again.
		pdata, err := readFile(t.file)
		if err != nil {
			return nil, fmt.Errorf("load the Procfile named in %s: %w", path, err)
		}
		cfg, err := loadProcfile(t.file, pdata, opts.under(t.opts))
		if err != nil {
			return nil, err
		}
		// The project is the TOML file's folder (its dev runner's socket
		// is found from there), wherever the Procfile is.
		cfg.File, cfg.Dir, cfg.Sources = path, absDir(path), []string{t.file}
		return cfg, nil
	}
	cfg, err := loadProcfile(path, data, opts)
	if err != nil && !strings.HasPrefix(why, "its name") { // taken for a Procfile by its content
		err = triedAs(err, "a Procfile", why)
	}
	return cfg, err
}

// loadProcfile is LoadWithOptions of a Procfile whose text is data.
func loadProcfile(path string, data []byte, opts ProcfileOptions) (*Config, error) {
	var envFiles []string
	if opts.EnvFiles != nil {
		envFiles = opts.EnvFiles
	} else if envPath := filepath.Join(filepath.Dir(path), ".env"); fileExists(envPath) {
		envFiles = []string{envPath}
	}
	for i, f := range envFiles {
		if abs, err := filepath.Abs(f); err == nil {
			envFiles[i] = abs
		}
	}
	if len(envFiles) > 0 {
		env, err := LoadEnvFiles(envFiles)
		if err != nil {
			return nil, err
		}
		maps.Copy(env, opts.Env)
		opts.Env = env
	}
	cfg, err := ParseProcfile(path, data, opts)
	if err != nil {
		return nil, err
	}
	for _, p := range cfg.Programs {
		p.EnvFiles = slices.Clone(envFiles)
	}
	return cfg, nil
}

// IsProcfile reports whether path's name makes it a Procfile ("Procfile"
// or "Procfile.*"); Load also reads other names as Procfiles by their
// content (fileFormat).
func IsProcfile(path string) bool {
	base := filepath.Base(path)
	return base == "Procfile" || strings.HasPrefix(base, "Procfile.")
}

// readFile reads a regular file of at most maxFileSize bytes (a FIFO
// named by mistake is refused, not waited on); its errors name path.
func readFile(path string) ([]byte, error) {
	data, err := smallfile.Read(path, maxFileSize)
	var tooLarge *smallfile.TooLargeError
	if errors.Is(err, smallfile.ErrNotRegular) || errors.As(err, &tooLarge) {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return data, err
}

// Parse validates data, the TOML text of file. file names the file in
// errors and anchors relative paths (its directory need not exist unless an
// env_file is named). ${VAR} in env values is expanded from this process's
// environment. On any problem it returns an ErrorList with all of them.
func Parse(file string, data []byte) (*Config, error) {
	return parse(file, data, os.LookupEnv)
}

func parse(file string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	if err := checkSize(file, data); err != nil {
		return nil, err
	}
	if err := checkTOMLBounds(file, data); err != nil {
		return nil, err
	}
	var raw map[string]any
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return nil, syntaxError(file, err)
	}
	d := &decoder{
		file:    file,
		dir:     absDir(file),
		ix:      indexLines(string(data)),
		lookup:  lookup,
		errs:    &errorSet{},
		deps:    map[*Program][][]string{},
		refused: map[string]bool{},

		envFileCache: map[string]*envFileRead{},
	}
	cfg := d.config(toNode(nil, raw), md.Keys())
	if err := d.errs.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// syntaxError turns a toml error into an ErrorList of one.
func syntaxError(file string, err error) error {
	e := &Error{File: file, Msg: err.Error()}
	var pe toml.ParseError
	if errors.As(err, &pe) {
		e.Line = max(pe.Position.Line, 0)
		e.Key = pe.LastKey
		if pe.Message != "" {
			e.Msg = pe.Message
		}
	}
	if e.Msg == "" {
		e.Msg = "invalid TOML"
	}
	e.Key, e.Msg = oneLine(e.Key), oneLine(e.Msg)
	return ErrorList{e}
}

func absDir(file string) string {
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return filepath.Clean(filepath.Dir(file))
	}
	return dir
}

// node is a decoded TOML value with the key path it was written at, so an
// error about a value merged in from [defaults] names defaults.KEY.
type node struct {
	path []string
	v    any // map[string]*node for a table, else what toml.Decode produced
}

func toNode(path []string, v any) *node {
	m, ok := v.(map[string]any)
	if !ok {
		return &node{path: path, v: v}
	}
	t := make(map[string]*node, len(m))
	for k, x := range m {
		t[k] = toNode(append(slices.Clip(path), k), x)
	}
	return &node{path: path, v: t}
}

// countValues counts the values under n (nil: none): keys and array
// elements, nested ones too.
func countValues(n *node) int {
	if n == nil {
		return 0
	}
	return countIn(n.v)
}

func countIn(v any) int {
	c := 1
	switch x := v.(type) {
	case map[string]*node:
		for _, n := range x {
			c += countIn(n.v)
		}
	case map[string]any:
		for _, y := range x {
			c += countIn(y)
		}
	case []any:
		for _, y := range x {
			c += countIn(y)
		}
	case []map[string]any:
		for _, y := range x {
			c += countIn(y)
		}
	}
	return c
}

// alternatives are keys of which a table holds one: when a program sets one
// of them, the other ones from [defaults] are dropped rather than merged.
func alternatives(rel []string) []string {
	if len(rel) == 2 && rel[0] == "hooks" {
		return []string{"command", "http"}
	}
	if len(rel) == 2 && rel[0] == "probes" {
		return []string{"command", "http", "tcp"}
	}
	return nil
}

// merge lays b (a program's value) over a (the [defaults] value): tables
// merge key by key, anything else is replaced.
func merge(a, b *node, rel []string) *node {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	at, aok := a.v.(map[string]*node)
	bt, bok := b.v.(map[string]*node)
	if !aok || !bok {
		return b
	}
	out := make(map[string]*node, len(at)+len(bt))
	for k, v := range at {
		out[k] = v
	}
	if alts := alternatives(rel); slices.ContainsFunc(alts, func(k string) bool { return bt[k] != nil }) {
		for _, k := range alts {
			delete(out, k)
		}
	}
	for k, v := range bt {
		out[k] = merge(out[k], v, append(slices.Clip(rel), k))
	}
	return &node{path: b.path, v: out}
}

// decoder turns nodes into typed values, recording every problem.
type decoder struct {
	file   string
	dir    string
	ix     lineIndex
	lookup func(string) (string, bool)
	errs   *errorSet
	// deps keeps the key path of each depends_on entry, for errors found
	// once all programs are known.
	deps map[*Program][][]string
	// exitOn keeps the key path of each exit_on entry.
	exitOn [][]string
	// refused names programs left out for their own errors, so references
	// to them are not reported as unknown as well.
	refused map[string]bool
	// envFileCache holds each env_file read so far; envVars and envBytes
	// count the variables of every program's environment (setEnv).
	envFileCache      map[string]*envFileRead
	envVars, envBytes int
}

func (d *decoder) errorf(path []string, format string, args ...any) {
	d.errs.add(&Error{File: d.file, Line: d.ix.line(path), Key: keyString(path), Msg: fmt.Sprintf(format, args...)})
}

// keyString prints a path as TOML would write it: a.b."c d".e[2].
func keyString(path []string) string {
	var b strings.Builder
	for i, s := range path {
		switch {
		case strings.HasPrefix(s, "["):
			b.WriteString(s)
			continue
		case i > 0:
			b.WriteByte('.')
		}
		if s != "" && strings.IndexFunc(s, func(r rune) bool { return r >= 128 || !isBare(byte(r)) }) < 0 {
			b.WriteString(s)
		} else {
			fmt.Fprintf(&b, "%q", s)
		}
	}
	return b.String()
}

func elem(path []string, i int) []string {
	return append(slices.Clip(path), fmt.Sprintf("[%d]", i))
}

func (d *decoder) config(root *node, keys []toml.Key) *Config {
	cfg := &Config{File: d.file, Dir: d.dir}
	top := d.table(root, "a TOML document")
	d.known(top, "supervisor", "defaults", "program")
	cfg.Supervisor = d.supervisor(top["supervisor"])

	defaults := top["defaults"]
	if defaults != nil {
		if d.table(defaults, "a table of program keys: [defaults]") == nil {
			defaults = nil
		} else {
			d.program("", defaults, true) // reports bad defaults even with no programs
		}
	}

	progs := top["program"]
	var table map[string]*node
	if progs != nil {
		table = d.table(progs, "a table of programs: [program.NAME]")
	}
	// Programs in file order: MetaData.Keys lists keys as they appear.
	var names []string
	seen := map[string]bool{} // not slices.Contains: thousands of programs
	for _, k := range keys {
		if len(k) >= 2 && k[0] == "program" && table[k[1]] != nil && !seen[k[1]] {
			seen[k[1]] = true
			names = append(names, k[1])
		}
	}
	if len(names) > maxPrograms {
		// Each program costs a few KiB to decode: refuse before that.
		d.errorf(table[names[maxPrograms]].path, "more than %d programs", maxPrograms)
		return cfg
	}
	if n := countValues(defaults); n*len(names) > maxDefaultsApplied {
		// Each program decodes every value of [defaults] anew.
		d.errorf(defaults.path, "%d values applied to %d programs: more than %d to decode; move some into the programs that need them", n, len(names), maxDefaultsApplied)
		return cfg
	}
	for _, name := range names {
		n := table[name]
		if err := validName(name); err != nil {
			d.errorf(n.path, "%v", err)
			d.refused[name] = true
			continue
		}
		if d.table(n, fmt.Sprintf("a table: [program.%s]", name)) == nil {
			d.refused[name] = true
			continue
		}
		// A program with errors stays in the list so that its depends_on
		// is checked too; any error refuses the whole file anyway.
		p := d.program(name, merge(defaults, n, nil), false)
		d.countInstances(p, n)
		cfg.Programs = append(cfg.Programs, p)
	}
	if progs == nil || table != nil && len(table) == 0 {
		d.errorf([]string{"program"}, "no programs: add at least one [program.NAME] table with a command")
	}
	d.crossCheck(cfg)
	return cfg
}

// table returns n's table, or reports that n must be what.
func (d *decoder) table(n *node, what string) map[string]*node {
	t, ok := n.v.(map[string]*node)
	if !ok {
		d.errorf(n.path, "must be %s (got %s)", what, describe(n.v))
		return nil
	}
	return t
}

// known reports every key of t not in names, suggesting a near one.
func (d *decoder) known(t map[string]*node, names ...string) {
	for k, n := range t {
		if slices.Contains(names, k) {
			continue
		}
		msg := "unknown key"
		if s := suggest(k, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		} else if len(names) <= 8 {
			msg += " (known: " + strings.Join(names, ", ") + ")"
		}
		d.errorf(n.path, "%s", msg)
	}
}

// suggest returns the name closest to k when it is a likely typo: at most
// one edit per three characters.
func suggest(k string, names []string) string {
	best, bestD := "", len(k)/3+1
	for _, n := range names {
		if len(n)-len(k) >= bestD || len(k)-len(n) >= bestD {
			continue // too far apart: thousands of unknown keys ask this
		}
		if dist := editDistance(strings.ToLower(k), n); dist < bestD {
			best, bestD = n, dist
		}
	}
	return best
}

// editDistance counts insertions, deletions, substitutions and swaps of
// neighbours (optimal string alignment), so "wbe" is one edit from "web".
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b)) // no typo is that long; bound the work
	}
	// Three rows on the stack: a file of thousands of unknown keys asks
	// this thousands of times.
	var rows [3][65]int
	prev2, prev, cur := &rows[0], &rows[1], &rows[2]
	for j := 0; j <= len(b); j++ {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// describe names a decoded value's type, with the value when short.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			return "a string"
		}
		return fmt.Sprintf("%q", x)
	case int64:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return fmt.Sprintf("float %v", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case []any:
		return "an array"
	case []map[string]any:
		return "an array of tables"
	case map[string]*node, map[string]any:
		return "a table"
	case nil:
		return "nothing"
	default:
		return "a date/time"
	}
}

func (d *decoder) str(n *node) (string, bool) {
	s, ok := n.v.(string)
	if !ok {
		d.errorf(n.path, "must be a string (got %s)", describe(n.v))
	}
	return s, ok
}

func (d *decoder) boolean(n *node) (bool, bool) {
	b, ok := n.v.(bool)
	if !ok {
		d.errorf(n.path, "must be true or false (got %s)", describe(n.v))
	}
	return b, ok
}

// integer reads an integer in [lo, hi].
func (d *decoder) integer(n *node, lo, hi int64) (int64, bool) {
	i, ok := n.v.(int64)
	if !ok {
		d.errorf(n.path, "must be an integer (got %s)", describe(n.v))
		return 0, false
	}
	if i < lo || i > hi {
		d.errorf(n.path, "must be between %d and %d (got %d)", lo, hi, i)
		return 0, false
	}
	return i, true
}

func (d *decoder) enum(n *node, names ...string) (string, bool) {
	s, ok := d.str(n)
	if !ok {
		return "", false
	}
	if !slices.Contains(names, s) {
		d.errorf(n.path, "must be one of %s (got %q)", strings.Join(names, ", "), s)
		return "", false
	}
	return s, true
}

func (d *decoder) duration(n *node) (time.Duration, bool) {
	s, isStr := n.v.(string)
	if !isStr {
		d.errorf(n.path, "must be a duration string like \"10s\" (got %s)", describe(n.v))
		return 0, false
	}
	dur, err := parseDuration(s)
	if err != nil {
		d.errorf(n.path, "%v", err)
		return 0, false
	}
	return dur, true
}

// size reads a byte size: an integer, or a string for ParseSize.
func (d *decoder) size(n *node) (int64, bool) {
	switch x := n.v.(type) {
	case int64:
		if x < 0 {
			d.errorf(n.path, "must not be negative (got %d)", x)
			return 0, false
		}
		return x, true
	case string:
		v, err := ParseSize(x)
		if err != nil {
			d.errorf(n.path, "%v", err)
			return 0, false
		}
		return v, true
	}
	d.errorf(n.path, "must be a size like \"256MiB\" or a number of bytes (got %s)", describe(n.v))
	return 0, false
}

// strs reads an array of strings, or a single string as an array of one.
func (d *decoder) strs(n *node) ([]string, bool) {
	if s, ok := n.v.(string); ok {
		return []string{s}, true
	}
	arr, ok := n.v.([]any)
	if !ok {
		d.errorf(n.path, "must be a string or an array of strings (got %s)", describe(n.v))
		return nil, false
	}
	out := make([]string, 0, len(arr))
	good := true
	for i, x := range arr {
		s, ok := x.(string)
		if !ok {
			d.errorf(elem(n.path, i), "must be a string (got %s)", describe(x))
			good = false
		}
		out = append(out, s)
	}
	return out, good
}

// command reads a string (split by SplitCommand) or an array of strings.
func (d *decoder) command(n *node) ([]string, bool) {
	var argv []string
	switch x := n.v.(type) {
	case string:
		words, err := SplitCommand(x)
		if err != nil {
			d.errorf(n.path, "%v", err)
			return nil, false
		}
		argv = words
	case []any:
		var ok bool
		if argv, ok = d.strs(n); !ok {
			return nil, false
		}
	default:
		d.errorf(n.path, "must be a string or an array of strings (got %s)", describe(n.v))
		return nil, false
	}
	if len(argv) == 0 || argv[0] == "" {
		d.errorf(n.path, "must not be empty")
		return nil, false
	}
	if slices.ContainsFunc(argv, func(s string) bool { return strings.ContainsRune(s, 0) }) {
		d.errorf(n.path, "must not contain NUL bytes")
		return nil, false
	}
	return argv, true
}

// path reads a file path and makes it absolute against the file's dir.
func (d *decoder) path(n *node) (string, bool) {
	s, ok := d.str(n)
	if !ok {
		return "", false
	}
	if s == "" || strings.ContainsRune(s, 0) {
		d.errorf(n.path, "must be a non-empty path")
		return "", false
	}
	return d.abs(s), true
}

func (d *decoder) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
