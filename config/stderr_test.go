package config

import (
	"strings"
	"testing"
)

// stderr = "stdout" merges the streams into one pipe: per program, from
// [defaults], and replaced either way by the program's own stderr.
func TestStderrToStdout(t *testing.T) {
	for _, c := range []struct {
		name, src string
		merged    bool
		errFile   string // the stderr table's file, when kept
	}{
		{"program", "[program.web]\ncommand = \"x\"\nstderr = \"stdout\"\n", true, ""},
		{"defaults", "[defaults]\nstderr = \"stdout\"\n[program.web]\ncommand = \"x\"\n", true, ""},
		{"a program's table over the default", "[defaults]\nstderr = \"stdout\"\n[program.web]\ncommand = \"x\"\nstderr = { file = \"/var/log/web.err\" }\n", false, "/var/log/web.err"},
		{"a program's merge over a default table", "[defaults]\nstderr = { file = \"/var/log/all.err\" }\n[program.web]\ncommand = \"x\"\nstderr = \"stdout\"\n", true, ""},
		{"the table", "[program.web]\ncommand = \"x\"\nstderr = { file = \"/var/log/web.err\" }\n", false, "/var/log/web.err"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("s.toml", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			p := cfg.Program("web")
			if p.StderrToStdout != c.merged || p.Stderr.File != c.errFile {
				t.Errorf("StderrToStdout %v, stderr %+v; want %v and file %q", p.StderrToStdout, p.Stderr, c.merged, c.errFile)
			}
			if c.merged && p.Stderr != (Output{}) {
				t.Errorf("merged, yet stderr has a destination of its own: %+v", p.Stderr)
			}
		})
	}
	for _, c := range []struct{ src, want string }{
		{"[program.web]\ncommand = \"x\"\nstderr = \"stderr\"\n", `s.toml:3: program.web.stderr: must be "stdout" or a table like { console = true, file = "web.err.log" } (got "stderr")`},
		{"[program.web]\ncommand = \"x\"\n\nstderr = true\n", `s.toml:4: program.web.stderr: must be "stdout" or a table like { console = true, file = "web.err.log" } (got boolean true)`},
		{"[defaults]\nstderr = \"STDOUT\"\n[program.web]\ncommand = \"x\"\n", `s.toml:2: defaults.stderr: must be "stdout"`},
		// stdout has no such form: there is nothing for it to go into.
		{"[program.web]\ncommand = \"x\"\nstdout = \"stderr\"\n", `s.toml:3: program.web.stdout: must be a table`},
	} {
		_, err := Parse("s.toml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %s", c.src, err, c.want)
		}
	}
}

// Merging the streams changes the process's descriptor 2: a reload that
// turns it on or off needs a new process.
func TestStderrToStdoutNeedsNewProcess(t *testing.T) {
	const base = "[program.web]\ncommand = \"server\"\n"
	old := mustParse(t, base).Programs[0]
	p := mustParse(t, base+"stderr = \"stdout\"\n").Programs[0]
	if old.Equal(p) || !old.NeedsNewProcess(p) || !p.NeedsNewProcess(old) {
		t.Errorf("stderr = \"stdout\" on a reload: Equal %v, NeedsNewProcess %v", old.Equal(p), old.NeedsNewProcess(p))
	}
}
