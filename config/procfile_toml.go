package config

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// A supervise.toml with a [procfile] table runs a Procfile with the
// dev-runner settings written down, so that `supervise` in the folder
// needs no flags:
//
//	[procfile]
//	file = "Procfile.dev"
//	port = 3000
//	watch_ignore = ["*.gen"]
//
// The flags of a run go over the table's values (lists of names and
// ignores add up). The Procfile's lines are the programs: the file holds
// no other table.

// procfileKeys are the keys of [procfile].
var procfileKeys = []key[*procfileTable]{
	{"file", func(d *decoder, t *procfileTable, v *node) {
		if p, ok := d.path(v); ok {
			t.file = p
		}
	}},
	{"port", func(d *decoder, t *procfileTable, v *node) { setInt(d, v, 1, maxPort, &t.opts.BasePort) }},
	{"formation", func(d *decoder, t *procfileTable, v *node) {
		m := d.table(v, "a table of instances per process type, like { web = 2, worker = 1 }")
		for _, name := range slices.Sorted(maps.Keys(m)) {
			n := 0
			if setInt(d, m[name], 0, 10000, &n) {
				if t.opts.Formation == nil {
					t.opts.Formation = map[string]int{}
				}
				t.opts.Formation[name] = n
			}
		}
	}},
	{"restart", func(d *decoder, t *procfileTable, v *node) {
		r, _ := d.enum(v, string(RestartAlways), string(RestartOnFailure), string(RestartNever))
		t.opts.Restart = RestartPolicy(r)
	}},
	{"keep_running", func(d *decoder, t *procfileTable, v *node) { setBool(d, v, &t.opts.KeepRunning) }},
	{"env_files", func(d *decoder, t *procfileTable, v *node) { t.opts.EnvFiles = d.paths(v) }},
	{"watch", func(d *decoder, t *procfileTable, v *node) { setBool(d, v, &t.opts.Watch) }},
	{"watch_paths", func(d *decoder, t *procfileTable, v *node) { t.opts.WatchPaths = d.paths(v) }},
	{"watch_ignore", func(d *decoder, t *procfileTable, v *node) { t.opts.WatchIgnore = d.globs(v) }},
	{"can_die", func(d *decoder, t *procfileTable, v *node) { t.opts.CanDie, _ = d.strs(v) }},
	{"auto_restart", func(d *decoder, t *procfileTable, v *node) { t.opts.AutoRestart, _ = d.strs(v) }},
	{"hold_ports", func(d *decoder, t *procfileTable, v *node) { setBool(d, v, &t.opts.HoldPorts) }},
}

// procfileTable is a decoded [procfile]: the Procfile to run (absolute)
// and the settings.
type procfileTable struct {
	file string
	opts ProcfileOptions
}

// paths reads an array of paths, relative ones from the file's folder.
func (d *decoder) paths(n *node) []string {
	list, _ := d.strs(n)
	var out []string
	for i, p := range list {
		if p == "" || strings.ContainsRune(p, 0) {
			d.errorf(elem(n.path, i), "must be a non-empty path")
			continue
		}
		out = append(out, d.abs(p))
	}
	return out
}

// readProcfileTable decodes the [procfile] table of the TOML file, or
// returns nil when it has none (or is not valid TOML: Parse says why).
func readProcfileTable(file string, data []byte) (*procfileTable, error) {
	if !bytes.Contains(data, []byte("procfile")) {
		return nil, nil // no such table: decode the file once, in Parse
	}
	if err := checkSize(file, data); err != nil {
		return nil, err
	}
	if err := checkTOMLBounds(file, data); err != nil {
		return nil, err
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, nil
	}
	if _, ok := raw["procfile"]; !ok {
		return nil, nil
	}
	d := &decoder{file: file, dir: absDir(file), ix: indexLines(string(data)), lookup: os.LookupEnv, errs: &errorSet{}}
	top := toNode(nil, raw).v.(map[string]*node)
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if k != "procfile" {
			d.errorf([]string{k}, "a file with [procfile] runs the processes of that Procfile: move [%s] to a file of its own, or drop [procfile]", k)
		}
	}
	t := &procfileTable{file: filepath.Join(d.dir, "Procfile")}
	if m := d.table(top["procfile"], "a table: [procfile]"); m != nil {
		decodeKeys(d, m, t, procfileKeys)
	}
	if err := d.errs.err(); err != nil {
		return nil, err
	}
	return t, nil
}

// under lays the flags of a run (o) over the table's settings (file):
// a value given wins, lists of ignores add up, formations merge.
func (o ProcfileOptions) under(file ProcfileOptions) ProcfileOptions {
	out := o
	if out.BasePort == 0 {
		out.BasePort = file.BasePort
	}
	if out.Restart == "" {
		out.Restart = file.Restart
	}
	out.KeepRunning = o.KeepRunning || file.KeepRunning
	if out.EnvFiles == nil {
		out.EnvFiles = file.EnvFiles
	}
	out.Watch = o.Watch || file.Watch
	out.HoldPorts = o.HoldPorts || file.HoldPorts
	if out.WatchPaths == nil {
		out.WatchPaths = file.WatchPaths
	}
	out.WatchIgnore = slices.Concat(file.WatchIgnore, o.WatchIgnore)
	out.CanDie = slices.Concat(file.CanDie, o.CanDie)
	out.AutoRestart = slices.Concat(file.AutoRestart, o.AutoRestart)
	if file.Formation != nil {
		out.Formation = maps.Clone(file.Formation)
		maps.Copy(out.Formation, o.Formation)
	}
	return out
}
