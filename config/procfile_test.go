package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestParseProcfile(t *testing.T) {
	src := "# dev processes\n\nweb: bundle exec rails s -p $PORT\nworker:  ./worker --queue=default && echo done \r\n  # indented comment\nclock: sh -c 'date; sleep 60'\n"
	cfg, err := ParseProcfile("/app/Procfile", []byte(src), ProcfileOptions{Env: map[string]string{"RAILS_ENV": "development"}})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Procfile || cfg.Dir != "/app" || cfg.File != "/app/Procfile" {
		t.Errorf("cfg = %+v", cfg)
	}
	type row struct {
		name, cmd string
		line      int
		port      int
	}
	want := []row{
		{"web", "bundle exec rails s -p $PORT", 3, 5000},
		{"worker", "./worker --queue=default && echo done", 4, 5100},
		{"clock", "sh -c 'date; sleep 60'", 6, 5200},
	}
	if len(cfg.Programs) != len(want) {
		t.Fatalf("got %d programs, want %d", len(cfg.Programs), len(want))
	}
	for i, w := range want {
		p := cfg.Programs[i]
		if p.Name != w.name || p.Line != w.line || p.Port != w.port ||
			!reflect.DeepEqual(p.Command, []string{"/bin/sh", "-c", w.cmd}) {
			t.Errorf("program %d = %s line %d port %d %q; want %+v", i, p.Name, p.Line, p.Port, p.Command, w)
		}
		if want := map[string]string{"RAILS_ENV": "development", "PORT": strconv.Itoa(w.port)}; !reflect.DeepEqual(p.Env, want) {
			t.Errorf("%s env = %v, want %v", p.Name, p.Env, want)
		}
		if p.Restart != RestartNever || p.Instances != 1 || !p.Autostart || p.Dir != "/app" || !p.Stdout.Console {
			t.Errorf("%s: dev defaults not applied: %+v", p.Name, p)
		}
	}
	if want := []string{"web", "worker", "clock"}; !reflect.DeepEqual(cfg.Supervisor.ExitOn, want) {
		t.Errorf("ExitOn = %v, want %v (one ending stops the set)", cfg.Supervisor.ExitOn, want)
	}
	if cfg.Supervisor.Workers != DefaultWorkers || cfg.Supervisor.ShutdownTimeout != DefaultShutdownTimeout {
		t.Errorf("Supervisor = %+v", cfg.Supervisor)
	}
}

func TestParseProcfileOptions(t *testing.T) {
	src := "web: server\nworker: work\nclock: tick\n"
	cfg, err := ParseProcfile("Procfile", []byte(src), ProcfileOptions{
		BasePort:    3000,
		PortStep:    10,
		Formation:   map[string]int{"web": 2, "clock": 0, "all": 3},
		Restart:     RestartOnFailure,
		KeepRunning: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	web, worker, clock := cfg.Program("web"), cfg.Program("worker"), cfg.Program("clock")
	if web.Instances != 2 || worker.Instances != 3 || clock.Autostart || !web.Autostart {
		t.Errorf("formation: web %d, worker %d, clock autostart %v", web.Instances, worker.Instances, clock.Autostart)
	}
	if web.Port != 3000 || worker.Port != 3010 || clock.Port != 3020 {
		t.Errorf("ports = %d %d %d, want 3000 3010 3020", web.Port, worker.Port, clock.Port)
	}
	if web.Restart != RestartOnFailure || cfg.Supervisor.ExitOn != nil {
		t.Errorf("restart %q, ExitOn %v", web.Restart, cfg.Supervisor.ExitOn)
	}

	// PORT from .env is the base when no BasePort is given.
	cfg, err = ParseProcfile("Procfile", []byte(src), ProcfileOptions{Env: map[string]string{"PORT": "8000"}})
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Program("worker"); p.Port != 8100 || p.Env["PORT"] != "8100" {
		t.Errorf("worker port %d env %q, want 8100", p.Port, p.Env["PORT"])
	}
}

func TestParseProcfileErrors(t *testing.T) {
	src := "web: ok\nno colon here\nweb: again\nbad name!: x\nempty:\n"
	_, err := ParseProcfile("Procfile", []byte(src), ProcfileOptions{Formation: map[string]int{"nope": 1, "web": -1}, Restart: "sometimes"})
	want := []string{
		`Procfile: formation.nope: no such process type in the Procfile`,
		`Procfile: formation.web: must be between 0 and 10000 (got -1)`,
		`Procfile: restart: must be one of always, on-failure, never (got "sometimes")`,
		`Procfile:2: want "name: command" (no ":" on this line)`,
		`Procfile:3: web: process type web is given twice: here and on Procfile:1 (names must be unique; rename one, e.g. web2)`,
		`Procfile:4: bad name!: invalid process type name: up to 63 letters, digits, '_' or '-', starting with a letter or digit`,
		`Procfile:5: empty: empty command`,
	}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("got %v, want an ErrorList", err)
	}
	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := ParseProcfile("Procfile", []byte("# nothing\n\n"), ProcfileOptions{}); err == nil || !strings.Contains(err.Error(), "no processes") {
		t.Errorf("empty Procfile: got %v", err)
	}
}

func TestParseEnv(t *testing.T) {
	src := `# comment
PLAIN=value
SPACED =  padded value   
export EXPORTED=yes
	export   TABBED=1
EMPTY=
COMMENTED=abc # a comment
HASH=abc#def
SINGLE='literal $HOME \n # not a comment'
DOUBLE="tab\there \"quoted\" \$x \\ \q"
MULTI="line one
line two"
MULTI_SINGLE='a
b'   # after
EQUALS=a=b=c
exporter=notexport
`
	got, err := parseEnv(".env", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"PLAIN":        "value",
		"SPACED":       "padded value",
		"EXPORTED":     "yes",
		"TABBED":       "1",
		"EMPTY":        "",
		"COMMENTED":    "abc",
		"HASH":         "abc#def",
		"SINGLE":       `literal $HOME \n # not a comment`,
		"DOUBLE":       "tab\there \"quoted\" $x \\ \\q",
		"MULTI":        "line one\nline two",
		"MULTI_SINGLE": "a\nb",
		"EQUALS":       "a=b=c",
		"exporter":     "notexport",
	}
	if !reflect.DeepEqual(got, want) {
		for k := range want {
			if got[k] != want[k] {
				t.Errorf("%s = %q, want %q", k, got[k], want[k])
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected %s = %q", k, got[k])
			}
		}
	}
}

func TestParseEnvErrors(t *testing.T) {
	src := "OK=1\nnoequals\n1BAD=x\nQ=\"closed\" junk\nA B=1\nOPEN=\"never\nclosed\n"
	_, err := parseEnv("app.env", src, nil)
	want := []string{
		`app.env:2: want KEY=VALUE (no "=" on this line)`,
		`app.env:3: 1BAD: invalid variable name: use letters, digits and '_', not starting with a digit`,
		`app.env:4: Q: unexpected text after the closing quote`,
		`app.env:5: A B: invalid variable name: use letters, digits and '_', not starting with a digit`,
		`app.env:6: OPEN: unterminated quoted value`,
	}
	if err == nil {
		t.Fatal("got no error")
	}
	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLoadProcfile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Procfile"), []byte("web: echo $PORT\napi: echo api\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(filepath.Join(dir, "Procfile"))
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Program("api"); !cfg.Procfile || p.Env["PORT"] != "5100" || len(p.Env) != 1 {
		t.Errorf("without .env: %+v", p)
	}
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("PORT=7000\nSECRET='s3cr3t'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(filepath.Join(dir, "Procfile"))
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Program("api"); p.Env["PORT"] != "7100" || p.Env["SECRET"] != "s3cr3t" {
		t.Errorf("with .env: %v", p.Env)
	}
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(filepath.Join(dir, "Procfile"))
	if want := filepath.Join(dir, ".env") + `:1: want KEY=VALUE (no "=" on this line)`; err == nil || err.Error() != want {
		t.Errorf("bad .env: got %v, want %s", err, want)
	}
	for name, want := range map[string]bool{"Procfile": true, "/x/Procfile.dev": true, "supervise.toml": false, "Procfile-old": false, "MyProcfile": false} {
		if got := IsProcfile(name); got != want {
			t.Errorf("IsProcfile(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestLoadEnvFileLimits(t *testing.T) {
	if _, err := LoadEnvFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("/dev/zero: got %v, want a refusal", err)
	}
	big := filepath.Join(t.TempDir(), "big.env")
	if err := os.WriteFile(big, []byte("A="+strings.Repeat("x", maxFileSize)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadEnvFile(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("big file: got %v", err)
	}
}

func TestLoadEnvFileFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo.env")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// Must not block waiting for a writer.
	if _, err := LoadEnvFile(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("fifo: got %v, want a refusal", err)
	}
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }

func TestParseFormation(t *testing.T) {
	good := []struct {
		in   string
		want map[string]int
	}{
		{"", nil},
		{"  ", nil},
		{"web=2,worker=1", map[string]int{"web": 2, "worker": 1}},
		{" web = 2 , all=0,", map[string]int{"web": 2, "all": 0}},
		{"clock=10000", map[string]int{"clock": 10000}},
	}
	for _, tt := range good {
		got, err := ParseFormation(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseFormation(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	bad := []struct{ in, want string }{
		{"web", `formation "web": want name=count, like web=2`},
		{"web=two", `formation "web=two": the count must be a whole number from 0 to 10000`},
		{"web=-1", `formation "web=-1": the count must be a whole number from 0 to 10000`},
		{"web=10001", `formation "web=10001": the count must be a whole number from 0 to 10000`},
		{"we b=1", `formation "we b=1": "we b" is not a process type name`},
		{"web=1,web=2", `formation "web=2": web is given twice`},
		{"a,b=x", "formation \"a\": want name=count, like web=2\nformation \"b=x\": the count must be a whole number from 0 to 10000"},
	}
	for _, tt := range bad {
		got, err := ParseFormation(tt.in)
		if err == nil || err.Error() != tt.want || got != nil {
			t.Errorf("ParseFormation(%q) = %v, %v; want the error %q", tt.in, got, err, tt.want)
		}
	}
}

func TestLoadWithOptions(t *testing.T) {
	dir := t.TempDir()
	procfile := filepath.Join(dir, "Procfile")
	if err := os.WriteFile(procfile, []byte("web: server\nworker: work\nclock: tick\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	envPath := filepath.Join(dir, ".env")
	if err := os.WriteFile(envPath, []byte("A=from-file\nB=from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	formation, err := ParseFormation("web=2,clock=0")
	if err != nil {
		t.Fatal(err)
	}
	opts := ProcfileOptions{Formation: formation, BasePort: 3000, Env: map[string]string{"B": "from-flag"}}
	cfg, err := LoadWithOptions(procfile, opts)
	if err != nil {
		t.Fatal(err)
	}
	web, worker, clock := cfg.Program("web"), cfg.Program("worker"), cfg.Program("clock")
	if web.Instances != 2 || worker.Instances != 1 || clock.Autostart {
		t.Errorf("formation not applied: web %d, worker %d, clock autostart %v", web.Instances, worker.Instances, clock.Autostart)
	}
	if web.Port != 3000 || worker.Port != 3100 {
		t.Errorf("ports %d %d, want 3000 3100", web.Port, worker.Port)
	}
	if want := map[string]string{"A": "from-file", "B": "from-flag", "PORT": "3100"}; !reflect.DeepEqual(worker.Env, want) {
		t.Errorf("env = %v, want %v (opts.Env over .env)", worker.Env, want)
	}
	if want := []string{envPath}; !reflect.DeepEqual(web.EnvFiles, want) {
		t.Errorf("EnvFiles = %v, want %v", web.EnvFiles, want)
	}
	if opts.Env["A"] != "" {
		t.Error("LoadWithOptions changed the caller's Env")
	}
	if !cfg.Supervisor.WatchConfig {
		t.Error("a Procfile is watched by default too")
	}

	// A formation naming a missing type is an error at formation.NAME.
	_, err = LoadWithOptions(procfile, ProcfileOptions{Formation: map[string]int{"wbe": 1}})
	if err == nil || err.Error() != procfile+`: formation.wbe: no such process type in the Procfile` {
		t.Errorf("unknown type: got %v", err)
	}

	// A TOML file takes no Procfile options.
	toml := filepath.Join(dir, "supervise.toml")
	if err := os.WriteFile(toml, []byte("[program.a]\ncommand = \"a\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadWithOptions(toml, ProcfileOptions{}); err != nil {
		t.Errorf("TOML without options: %v", err)
	}
	_, err = LoadWithOptions(toml, ProcfileOptions{Formation: formation})
	var list ErrorList
	if !errors.As(err, &list) || !strings.Contains(err.Error(), "apply to a Procfile only") {
		t.Errorf("TOML with a formation: got %v, want an ErrorList refusing it", err)
	}
}

// Interpolation, as docker compose and the dotenv libraries do it: in
// unquoted and double-quoted values, from earlier lines, then the outer
// lookup (the supervisor's environment), else empty; never in single
// quotes; \$ is a literal $; a $ that starts no reference stays.
func TestParseEnvInterpolation(t *testing.T) {
	src := `FOO=plain
INT=${FOO}-interp
BARE=$FOO-bare
BOTH=$FOO$FOO
DQ="${FOO} and $FOO"
SQ='${FOO} and $FOO'
OUTER=${FROM_OUTER}
UNSET=[${NOPE}]
LATER=${DEFINED_LATER}
DEFINED_LATER=x
DEFAULT=${NOPE:-fallback}
EMPTYDEF=${EMPTY:-fallback}
EMPTY=
ESCAPED=a\$FOO
ESCAPED_DQ="a\$FOO"
LONE=cost $ 5
DIGIT=$1
UNCLOSED=${FOO
PASS=pa$$word
CHAIN=${INT}!
`
	outer := func(name string) (string, bool) {
		if name == "FROM_OUTER" {
			return "outside", true
		}
		return "", false
	}
	got, err := parseEnv(".env", src, outer)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"INT": "plain-interp", "BARE": "plain-bare", "BOTH": "plainplain",
		"DQ": "plain and plain", "SQ": "${FOO} and $FOO", "OUTER": "outside", "UNSET": "[]",
		"LATER": "", "DEFAULT": "fallback", "EMPTYDEF": "fallback",
		"ESCAPED": "a$FOO", "ESCAPED_DQ": "a$FOO", "LONE": "cost $ 5", "DIGIT": "$1",
		"UNCLOSED": "${FOO", "PASS": "pa$word", "CHAIN": "plain-interp!",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}

// The first PORT comes from -p, else the env files, else the shell, else
// 5000; a port out of range, given or reached, is refused.
func TestProcfilePorts(t *testing.T) {
	src := []byte("web: a\nworker: b\n")
	for _, c := range []struct {
		opts ProcfileOptions
		want int    // web's port when ok
		err  string // else the error
	}{
		{ProcfileOptions{}, 5000, ""},
		{ProcfileOptions{ShellPort: "9000"}, 9000, ""},
		{ProcfileOptions{ShellPort: "9000", Env: map[string]string{"PORT": "8000"}}, 8000, ""},
		{ProcfileOptions{ShellPort: "9000", BasePort: 3000}, 3000, ""},
		{ProcfileOptions{BasePort: -5}, 0, "Procfile: port: must be from 1 to 65535 (got -5)"},
		{ProcfileOptions{BasePort: 70000}, 0, "Procfile: port: must be from 1 to 65535 (got 70000)"},
		{ProcfileOptions{ShellPort: "http"}, 0, `Procfile: $PORT: must be from 1 to 65535 (got "http")`},
		{ProcfileOptions{Env: map[string]string{"PORT": "0"}}, 0, `Procfile: PORT of the env files: must be from 1 to 65535 (got "0")`},
		{ProcfileOptions{BasePort: 65436}, 0, "Procfile:2: worker: PORT 65536 is past 65535"},
		{ProcfileOptions{BasePort: 65435}, 65435, ""},
		{ProcfileOptions{BasePort: 65000, Formation: map[string]int{"worker": 500}}, 0, "Procfile:2: worker: PORT 65599 is past 65535"},
	} {
		cfg, err := ParseProcfile("Procfile", src, c.opts)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%+v: %v", c.opts, err)
		case c.err == "" && cfg.Program("web").Port != c.want:
			t.Errorf("%+v: web's port %d, want %d", c.opts, cfg.Program("web").Port, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%+v: error %v, want %q", c.opts, err, c.err)
		}
	}
}

// --watch leaves out the dev runner's defaults and the .gitignore; paths
// and ignores add to it; a bad glob is refused.
func TestProcfileWatch(t *testing.T) {
	src := []byte("web: a\n")
	cfg, err := ParseProcfile("/p/Procfile", src, ProcfileOptions{})
	if err != nil || cfg.Program("web").Watch != nil {
		t.Fatalf("no watch asked: %v, %+v", err, cfg.Program("web").Watch)
	}
	cfg, err = ParseProcfile("/p/Procfile", src, ProcfileOptions{Watch: true, WatchIgnore: []string{"*.gen"}})
	if err != nil {
		t.Fatal(err)
	}
	want := &Watch{Paths: []string{"/p"}, Exclude: []string{"node_modules", "/log", "/tmp", "*.gen"}, GitIgnore: true, Debounce: DefaultWatchDebounce}
	if got := cfg.Program("web").Watch; !reflect.DeepEqual(got, want) {
		t.Errorf("watch = %+v, want %+v", got, want)
	}
	cfg, err = ParseProcfile("/p/Procfile", src, ProcfileOptions{WatchPaths: []string{"app", "/etc/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Program("web").Watch.Paths; !reflect.DeepEqual(got, []string{"/p/app", "/etc/x"}) {
		t.Errorf("paths = %q", got)
	}
	_, err = ParseProcfile("/p/Procfile", src, ProcfileOptions{Watch: true, WatchIgnore: []string{"../x"}})
	if err == nil || !strings.Contains(err.Error(), `/p/Procfile: watch_ignore: "../x":`) {
		t.Errorf("a bad glob: %v", err)
	}
}

// --can-die leaves a process type out of exit_on; --auto-restart restarts
// it always; a name not in the Procfile is refused.
func TestProcfileCanDieAutoRestart(t *testing.T) {
	src := []byte("migrate: a\nworker: b\nweb: c\n")
	cfg, err := ParseProcfile("Procfile", src, ProcfileOptions{CanDie: []string{"migrate"}, AutoRestart: []string{"worker"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Supervisor.ExitOn; !reflect.DeepEqual(got, []string{"worker", "web"}) {
		t.Errorf("exit_on = %q, want worker, web", got)
	}
	if cfg.Program("worker").Restart != RestartAlways || cfg.Program("web").Restart != RestartNever {
		t.Errorf("restart: worker %q, web %q", cfg.Program("worker").Restart, cfg.Program("web").Restart)
	}
	_, err = ParseProcfile("Procfile", src, ProcfileOptions{CanDie: []string{"nope"}, AutoRestart: []string{"gone"}})
	if err == nil || !strings.Contains(err.Error(), `Procfile: can_die: no process type "nope"`) || !strings.Contains(err.Error(), `Procfile: auto_restart: no process type "gone"`) {
		t.Errorf("unknown names: %v", err)
	}
}

// A file's format comes from its name, else from its first line.
func TestFileFormat(t *testing.T) {
	for _, c := range []struct {
		name, text string
		procfile   bool
	}{
		{"Procfile", "", true},
		{"Procfile.dev", "[x]\n", true},
		{"Procfile-dev", "", true},
		{"dev.procfile", "", true},
		{"procfile.toml", "web: a\n", false},
		{"supervise.toml", "", false},
		{"Devfile", "# c\n\n  web: ./run\n", true},
		{"Devfile", "[program.web]\n", false},
		{"Devfile", "key = \"a: b\"\n", false},
		{"Devfile", "", false},
	} {
		if got, why := fileFormat(c.name, []byte(c.text)); got != c.procfile || why == "" {
			t.Errorf("%s %q: procfile %v (%s), want %v", c.name, c.text, got, why, c.procfile)
		}
	}
}
