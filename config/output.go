package config

// The stdout and stderr tables: where a program's output goes.

import "github.com/supervise-dev/supervise/internal/consolepath"

func defaultOutput() Output {
	return Output{Console: true, MaxSize: DefaultLogMaxSize, MaxFiles: DefaultLogMaxFiles}
}

// outputDecoding is one stdout or stderr table being decoded.
type outputDecoding struct {
	*Output
	console *node // console, when set: file reads it
}

// outputKeys are the keys of [program.NAME.stdout] and stderr; console
// comes before file, which reads it.
var outputKeys = []key[*outputDecoding]{
	{"console", func(d *decoder, o *outputDecoding, v *node) { o.Console, _ = d.boolean(v); o.console = v }},
	{"file", func(d *decoder, o *outputDecoding, v *node) {
		o.File, _ = d.path(v)
		d.consoleFile(o.console, v, o.Output)
	}},
	{"max_size", func(d *decoder, o *outputDecoding, v *node) {
		if s, ok := d.size(v); ok {
			if s < 4096 && s != 0 { // 0: never rotated
				d.errorf(v.path, "must be at least 4KiB (got %d bytes)", s)
			}
			o.MaxSize = s
		}
	}},
	{"max_files", func(d *decoder, o *outputDecoding, v *node) {
		if i, ok := d.integer(v, 1, 1000); ok {
			o.MaxFiles = int(i)
		}
	}},
	{"timestamps", func(d *decoder, o *outputDecoding, v *node) { setBool(d, v, &o.Timestamps) }},
}

func (d *decoder) output(n *node) Output {
	o := defaultOutput()
	decodeKeys(d, d.table(n, `a table like { console = true, file = "web.log" }`), &outputDecoding{Output: &o}, outputKeys)
	return o
}

// stderr reads a program's stderr: its table, or "stdout", which makes
// descriptor 2 the stdout pipe (the shell's 2>&1): one pipe, the lines in
// the order written, where stdout goes. Merged, stderr has no destination
// of its own.
func (d *decoder) stderr(n *node) (o Output, toStdout bool) {
	if _, ok := n.v.(map[string]*node); ok {
		return d.output(n), false
	}
	if s, ok := n.v.(string); !ok || s != "stdout" {
		d.errorf(n.path, `must be "stdout" or a table like { console = true, file = "web.err.log" } (got %s)`, describe(n.v))
		return defaultOutput(), false
	}
	return Output{}, true
}

// IsConsolePath reports whether a log file path means supervise's own
// stdout or stderr.
func IsConsolePath(p string) bool { return consolepath.FD(p) != 0 }

// consoleFile turns a file naming supervise's own stdout or stderr into
// the console, without rotation: opening that name as a file would write
// over it (and /dev/stdout is every process's).
func (d *decoder) consoleFile(c, v *node, o *Output) {
	if !IsConsolePath(o.File) {
		return
	}
	if c != nil {
		if on, ok := c.v.(bool); ok && !on {
			d.errorf(v.path, "%s is supervise's own output, which console = false turns off: remove one of them", o.File)
		}
	}
	o.File, o.Console = "", true
}
