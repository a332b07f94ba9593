package config

// The watch table: restarting a program when its files change.

import (
	"strings"

	"github.com/supervise-dev/supervise/watch/glob"
)

// watchKeys are the keys of [program.NAME.watch].
var watchKeys = []key[*Watch]{
	{"paths", (*decoder).watchPaths},
	{"include", func(d *decoder, w *Watch, v *node) { w.Include = d.globs(v) }},
	{"exclude", func(d *decoder, w *Watch, v *node) { w.Exclude = d.globs(v) }},
	{"gitignore", func(d *decoder, w *Watch, v *node) { setBool(d, v, &w.GitIgnore) }},
	{"debounce", func(d *decoder, w *Watch, v *node) { setDuration(d, v, &w.Debounce) }},
	{"signal", func(d *decoder, w *Watch, v *node) {
		if sig, ok := d.signal(v); ok {
			w.Signal = sig
		}
	}},
}

// watch reads [program.NAME.watch]; paths default to dir, the program's.
func (d *decoder) watch(n *node, dir string) *Watch {
	t := d.table(n, `a table like { paths = ["src"], include = ["**/*.go"] }`)
	if t == nil {
		return nil
	}
	w := &Watch{Debounce: DefaultWatchDebounce}
	decodeKeys(d, t, w, watchKeys)
	if t["paths"] == nil {
		w.Paths = []string{dir}
	}
	return w
}

// watchPaths reads paths: a path or an array of at least one.
func (d *decoder) watchPaths(w *Watch, v *node) {
	paths, _ := d.strs(v)
	arr, isArr := v.v.([]any)
	for i, p := range paths {
		path := v.path
		if isArr {
			if _, isStr := arr[i].(string); !isStr {
				continue // reported by strs
			}
			path = elem(v.path, i)
		}
		if p == "" || strings.ContainsRune(p, 0) {
			d.errorf(path, "must be a non-empty path")
			continue
		}
		w.Paths = append(w.Paths, d.abs(p))
	}
	if isArr && len(paths) == 0 {
		d.errorf(v.path, "must name at least one path (leave paths out to watch the program's dir)")
	}
}

// globs reads a glob or an array of them, each checked by the matcher the
// watcher will use.
func (d *decoder) globs(n *node) []string {
	pats, _ := d.strs(n)
	arr, isArr := n.v.([]any)
	var out []string
	for i, p := range pats {
		path := n.path
		if isArr {
			if _, isStr := arr[i].(string); !isStr {
				continue // reported by strs
			}
			path = elem(n.path, i)
		}
		if _, err := glob.Compile(p); err != nil {
			d.errorf(path, "%q: %v", p, err)
			continue
		}
		out = append(out, p)
	}
	return out
}
