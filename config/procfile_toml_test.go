package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A supervise.toml with [procfile] runs that Procfile with its settings,
// the flags over them.
func TestProcfileTable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("Procfile.dev", "web: a\ncss: b\n")
	write("dev.env", "GREETING=hi\n")
	toml := write("supervise.toml", `[procfile]
file = "Procfile.dev"
port = 3000
formation = { web = 2 }
restart = "on-failure"
env_files = ["dev.env"]
watch_paths = ["app"]
watch_ignore = ["*.gen"]
`)
	cfg, err := LoadWithOptions(toml, ProcfileOptions{WatchIgnore: []string{"*.tmp2"}, Formation: map[string]int{"css": 0}})
	if err != nil {
		t.Fatal(err)
	}
	web, css := cfg.Program("web"), cfg.Program("css")
	if !cfg.Procfile || cfg.File != toml || cfg.Dir != dir || !reflect.DeepEqual(cfg.Sources, []string{filepath.Join(dir, "Procfile.dev")}) {
		t.Errorf("File %q, Dir %q, Sources %q, Procfile %v", cfg.File, cfg.Dir, cfg.Sources, cfg.Procfile)
	}
	if web.Port != 3000 || web.Instances != 2 || css.Autostart || web.Restart != RestartOnFailure || web.Env["GREETING"] != "hi" {
		t.Errorf("web = %+v, css autostart %v", web, css.Autostart)
	}
	if w := web.Watch; w == nil || !reflect.DeepEqual(w.Paths, []string{filepath.Join(dir, "app")}) || !reflect.DeepEqual(w.Exclude[len(w.Exclude)-2:], []string{"*.gen", "*.tmp2"}) {
		t.Errorf("watch = %+v", web.Watch)
	}
	if len(web.Listen) != 0 {
		t.Errorf("web holds %d sockets without hold_ports", len(web.Listen))
	}
	// hold_ports in the file holds each PORT, as --hold-ports does.
	write("supervise.toml", "[procfile]\nfile = \"Procfile.dev\"\nport = 3000\nhold_ports = true\n")
	if cfg, err := LoadWithOptions(toml, ProcfileOptions{}); err != nil {
		t.Errorf("hold_ports = true: %v", err)
	} else if s := cfg.Program("web").Listen; len(s) != 1 || s[0].Address != ":3000" {
		t.Errorf("hold_ports = true: web holds %+v, want its PORT", s)
	}
	write("supervise.toml", "[procfile]\nfile = \"Procfile.dev\"\nport = 3000\nformation = { web = 2 }\nrestart = \"on-failure\"\nenv_files = [\"dev.env\"]\nwatch_paths = [\"app\"]\nwatch_ignore = [\"*.gen\"]\n")
	// A flag goes over the file.
	if cfg, err := LoadWithOptions(toml, ProcfileOptions{BasePort: 4000}); err != nil || cfg.Program("web").Port != 4000 {
		t.Errorf("-p 4000 over port = 3000: %v", err)
	}

	for _, c := range []struct{ text, want string }{
		{"[procfile]\nport = 70000\n", "supervise.toml:2: procfile.port: must be"},
		{"[procfile]\nrestrt = \"always\"\n", "supervise.toml:2: procfile.restrt: unknown key"},
		{"[procfile]\n[program.web]\ncommand = \"x\"\n", "supervise.toml:2: program: a file with [procfile] runs the processes of that Procfile"},
		{"[procfile]\nformation = { web = -1 }\n", "supervise.toml:2: procfile.formation.web: must be"},
		{"[procfile]\nwatch_ignore = [\"../x\"]\n", "supervise.toml:2: procfile.watch_ignore[0]"},
		{"[procfile]\nfile = \"nope\"\n", "load the Procfile named in"},
	} {
		p := write("supervise.toml", c.text)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, c.want)) && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}
