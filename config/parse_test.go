package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// env is the supervisor environment the tests expand ${VAR} from.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	cfg, err := parse("/etc/sv/test.toml", []byte(src), env("HOME", "/home/me", "EMPTY", ""))
	if err != nil {
		t.Fatalf("parse: unexpected error:\n%v", err)
	}
	return cfg
}

// problems returns the printed errors of src, one per entry.
func problems(t *testing.T, src string) []string {
	t.Helper()
	_, err := parse("test.toml", []byte(src), env("HOME", "/home/me"))
	if err == nil {
		t.Fatalf("parse: got no error, want some")
	}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error is %T, want ErrorList: %v", err, err)
	}
	if got := strings.Join(strings.Split(err.Error(), "\n"), "\n"); got != err.Error() || len(strings.Split(got, "\n")) != len(list) {
		t.Fatalf("Error() is not one line per problem:\n%s", got)
	}
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.Error()
	}
	return out
}

func TestParseDefaults(t *testing.T) {
	cfg := mustParse(t, `
[program.web]
command = "server --port 80"
`)
	if cfg.File != "/etc/sv/test.toml" || cfg.Dir != "/etc/sv" || cfg.Procfile {
		t.Errorf("File, Dir, Procfile = %q, %q, %v", cfg.File, cfg.Dir, cfg.Procfile)
	}
	wantSup := Supervisor{Workers: 2, ShutdownTimeout: 30 * time.Second, LogFormat: "text", LogLevel: "info", WatchConfig: true, ProbeJitter: true, LogRing: 256 << 10,
		MaxConnections: DefaultMaxConnections, MaxFollowers: DefaultMaxFollowers}
	if !reflect.DeepEqual(cfg.Supervisor, wantSup) {
		t.Errorf("Supervisor = %+v, want %+v", cfg.Supervisor, wantSup)
	}
	want := &Program{
		Name:             "web",
		Line:             2,
		Command:          []string{"server", "--port", "80"},
		Dir:              "/etc/sv",
		Restart:          RestartAlways,
		SuccessExitCodes: []int{0},
		Instances:        1,
		Autostart:        true,
		StopSignal:       syscall.SIGTERM,
		StopTimeout:      10 * time.Second,
		MinStopGrace:     2 * time.Second,
		Backoff:          Backoff{Initial: 10 * time.Second, Max: 5 * time.Minute, ResetAfter: 10 * time.Minute},
		Sandbox:          Sandbox{Umask: -1},
		Stdout:           Output{Console: true, MaxSize: 10 << 20, MaxFiles: 5},
		Stderr:           Output{Console: true, MaxSize: 10 << 20, MaxFiles: 5},
	}
	if len(cfg.Programs) != 1 || !reflect.DeepEqual(cfg.Programs[0], want) {
		t.Errorf("program:\n got %+v\nwant %+v", cfg.Programs[0], want)
	}
}

func TestParseEveryKey(t *testing.T) {
	cfg := mustParse(t, `
[supervisor]
socket = "run/sv.sock"
socket_group = "adm"
workers = 4
shutdown_timeout = "1m"
log_format = "json"
log_level = "debug"
exit_on = "db"
watch_config = false
probe_jitter = false

[program.db]
command = ["postgres", "-D", "/var/lib/pg data"]

[program.web]
command = 'server --name "my web" --flag=a\ b'
dir = "srv"
env = { PORT = 8080, HOME_DIR = "${HOME}/x", MISSING = "${NOPE:-fallback}", DOLLAR = "a$$b$c" }
user = "www-data"
group = 33
groups = ["adm", 4]
restart = "on-failure"
success_exit_codes = [0, 3]
instances = 3
autostart = false
critical = true
sidecar = true
depends_on = ["db"]
stop_signal = "SIGQUIT"
stop_timeout = "2s"
min_stop_grace = "500ms"
backoff = { initial = "200ms", max = "1600ms" }
stdout = { console = false, file = "/var/log/web.log", max_size = "1MiB", max_files = 2 }
stderr = { file = "logs/web.err" }

[program.web.sandbox]
namespaces = ["pid", "mount", "uts"]
hostname = "web"
memory_max = "256MiB"
cpu_max = 0.5
pids_max = 64
no_new_privileges = true
umask = "0027"
rlimits = { nofile = { soft = 1024, hard = 4096 }, core = 0, fsize = "1G", nproc = "unlimited" }

[program.web.hooks.pre_start]
command = "./migrate.sh"
timeout = "5s"

[program.web.hooks.post_start]
http = "http://localhost:8080/ready"

[program.web.hooks.pre_stop]
http = { url = "https://localhost/drain", method = "post", headers = { X-Token = "t" }, expect_status = 204 }

[program.web.hooks.post_stop]
sleep = "5s"

[program.web.watch]
paths = ["src", "/etc/web.conf"]
include = ["**/*.go", "templates/**"]
exclude = "vendor"
debounce = "50ms"
signal = "HUP"
`)
	if got := cfg.Supervisor; got.Socket != "/etc/sv/run/sv.sock" || got.SocketGroup != "adm" || got.Workers != 4 ||
		got.ShutdownTimeout != time.Minute || got.LogFormat != "json" || got.LogLevel != "debug" ||
		!reflect.DeepEqual(got.ExitOn, []string{"db"}) || got.Line != 2 || got.WatchConfig || got.ProbeJitter {
		t.Errorf("Supervisor = %+v", got)
	}
	if len(cfg.Programs) != 2 || cfg.Programs[0].Name != "db" || cfg.Programs[1].Name != "web" {
		t.Fatalf("programs not in file order: %v", cfg.Programs)
	}
	if got, want := cfg.Programs[0].Command, []string{"postgres", "-D", "/var/lib/pg data"}; !reflect.DeepEqual(got, want) {
		t.Errorf("db command = %q, want %q", got, want)
	}
	w := cfg.Program("web")
	checks := []struct {
		name      string
		got, want any
	}{
		{"Line", w.Line, 16},
		{"Command", w.Command, []string{"server", "--name", "my web", "--flag=a b"}},
		{"Dir", w.Dir, "/etc/sv/srv"},
		{"Env", w.Env, map[string]string{"PORT": "8080", "HOME_DIR": "/home/me/x", "MISSING": "fallback", "DOLLAR": "a$b$c"}},
		{"User", w.User, "www-data"},
		{"Group", w.Group, "33"},
		{"Groups", w.Groups, []string{"adm", "4"}},
		{"Restart", w.Restart, RestartOnFailure},
		{"SuccessExitCodes", w.SuccessExitCodes, []int{0, 3}},
		{"Instances", w.Instances, 3},
		{"Autostart", w.Autostart, false},
		{"Critical", w.Critical, true},
		{"Sidecar", w.Sidecar, true},
		{"DependsOn", w.DependsOn, []string{"db"}},
		{"StopSignal", w.StopSignal, syscall.SIGQUIT},
		{"StopTimeout", w.StopTimeout, 2 * time.Second},
		{"MinStopGrace", w.MinStopGrace, 500 * time.Millisecond},
		{"Backoff", w.Backoff, Backoff{Initial: 200 * time.Millisecond, Max: 1600 * time.Millisecond, ResetAfter: 10 * time.Minute}}, // the kubelet's reset, whatever max is
		{"Stdout", w.Stdout, Output{Console: false, File: "/var/log/web.log", MaxSize: 1 << 20, MaxFiles: 2}},
		{"Stderr", w.Stderr, Output{Console: true, File: "/etc/sv/logs/web.err", MaxSize: 10 << 20, MaxFiles: 5}},
		{"Sandbox", w.Sandbox, Sandbox{
			Namespaces: []string{"pid", "mount", "uts"}, Hostname: "web", MemoryMax: 256 << 20, CPUMax: 0.5, PidsMax: 64,
			NoNewPrivileges: true, Umask: 0o027,
			Rlimits: map[string]Rlimit{"nofile": {1024, 4096}, "core": {0, 0}, "fsize": {1 << 30, 1 << 30}, "nproc": {Unlimited, Unlimited}},
		}},
		{"PreStart", w.Hooks.PreStart, &Hook{Command: []string{"./migrate.sh"}, Timeout: 5 * time.Second}},
		{"PostStart", w.Hooks.PostStart, &Hook{HTTP: &HTTPHook{URL: "http://localhost:8080/ready", Method: "GET"}, Timeout: 30 * time.Second}},
		{"PreStop", w.Hooks.PreStop, &Hook{HTTP: &HTTPHook{URL: "https://localhost/drain", Method: "POST", Headers: map[string]string{"X-Token": "t"}, ExpectStatus: 204}, Timeout: 30 * time.Second}},
		{"PostStop", w.Hooks.PostStop, &Hook{Sleep: 5 * time.Second, Timeout: 30 * time.Second}},
		{"Watch", w.Watch, &Watch{
			Paths: []string{"/etc/sv/src", "/etc/web.conf"}, Include: []string{"**/*.go", "templates/**"},
			Exclude: []string{"vendor"}, Debounce: 50 * time.Millisecond, Signal: syscall.SIGHUP,
		}},
		{"db Watch", cfg.Program("db").Watch, (*Watch)(nil)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestParseDefaultsMerge(t *testing.T) {
	cfg := mustParse(t, `
[defaults]
restart = "on-failure"
env = { A = "1", B = "2" }
stop_timeout = "3s"
sandbox = { memory_max = "64MiB", pids_max = 16 }
hooks.pre_start = { command = "echo default", timeout = "1s" }
hooks.post_stop = { command = "echo bye" }

[program.a]
command = "a"
env = { B = "override", C = "3" }
sandbox = { pids_max = 32 }
hooks.pre_start = { http = "http://x/" }

[program.b]
command = "b"
restart = "never"
`)
	a, b := cfg.Program("a"), cfg.Program("b")
	if a.Restart != RestartOnFailure || b.Restart != RestartNever {
		t.Errorf("restart: a=%q b=%q, want on-failure, never", a.Restart, b.Restart)
	}
	if want := map[string]string{"A": "1", "B": "override", "C": "3"}; !reflect.DeepEqual(a.Env, want) {
		t.Errorf("a env = %v, want %v (tables merge key by key)", a.Env, want)
	}
	if want := map[string]string{"A": "1", "B": "2"}; !reflect.DeepEqual(b.Env, want) {
		t.Errorf("b env = %v, want %v", b.Env, want)
	}
	if a.Sandbox.MemoryMax != 64<<20 || a.Sandbox.PidsMax != 32 || b.Sandbox.PidsMax != 16 {
		t.Errorf("sandbox merge: a=%+v b=%+v", a.Sandbox, b.Sandbox)
	}
	// The program's http replaces the default command, keeping the timeout.
	if h := a.Hooks.PreStart; h.Command != nil || h.HTTP == nil || h.HTTP.URL != "http://x/" || h.Timeout != time.Second {
		t.Errorf("a pre_start = %+v", h)
	}
	if h := b.Hooks.PreStart; !reflect.DeepEqual(h.Command, []string{"echo", "default"}) || h.HTTP != nil {
		t.Errorf("b pre_start = %+v", h)
	}
	if a.Hooks.PostStop == nil || b.Hooks.PostStop == nil || a.StopTimeout != 3*time.Second {
		t.Errorf("defaults not applied: %+v %v", a.Hooks, a.StopTimeout)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "restart enum",
			src:  "[program.web]\ncommand = \"x\"\nrestart = \"sometimes\"\n",
			want: []string{`test.toml:3: program.web.restart: must be one of always, on-failure, never (got "sometimes")`},
		},
		{
			name: "unknown keys with suggestions",
			src:  "[supervisor]\nworker = 3\n[program.web]\ncommand = \"x\"\nrestrat = \"always\"\nfoo = 1\n[programs.x]\n",
			want: []string{
				`test.toml:2: supervisor.worker: unknown key (did you mean "workers"?)`,
				`test.toml:5: program.web.restrat: unknown key (did you mean "restart"?)`,
				`test.toml:6: program.web.foo: unknown key`,
				`test.toml:7: programs: unknown key (did you mean "program"?)`,
			},
		},
		{
			name: "bad values",
			src: `[program.web]
command = "x"
stop_timeout = "10"
stop_signal = "TERMINATE"
instances = 0
success_exit_codes = [0, 300, "1"]
autostart = "yes"
backoff = { initial = "1m", max = "10s" }
[program.web.sandbox]
memory_max = "12 parsecs"
pids_max = 4
hostname = "web"
namespaces = ["pid", "time", "pid"]
umask = "0999"
cpu_max = "half"
rlimits = { nofile = -1, nproc = { soft = 10, hard = 5 }, cpu = "1G", bogus = 1 }
`,
			want: []string{
				`test.toml:3: program.web.stop_timeout: "10" is not a duration: want a Go duration like "10s", "1m30s" or "250ms"`,
				`test.toml:4: program.web.stop_signal: unknown signal "TERMINATE" (want a name like TERM, INT, QUIT, HUP, USR1, or a number 1-64)`,
				`test.toml:5: program.web.instances: must be between 1 and 10000 (got 0)`,
				`test.toml:6: program.web.success_exit_codes[1]: must be between 0 and 255 (got 300)`,
				`test.toml:6: program.web.success_exit_codes[2]: must be an integer (got "1")`,
				`test.toml:7: program.web.autostart: must be true or false (got "yes")`,
				`test.toml:8: program.web.backoff.max: must not be less than initial (10s < 1m0s)`,
				`test.toml:10: program.web.sandbox.memory_max: "12 parsecs": unknown size unit "parsecs" (use B, K, M, G, T, KiB, MiB, GiB, TiB, KB, MB, GB or TB)`,
				`test.toml:11: program.web.sandbox.pids_max: must be 0 (no limit) or at least 8 (got 4): the sandbox init needs a few`,
				`test.toml:12: program.web.sandbox.hostname: needs the "uts" namespace: add "uts" to namespaces`,
				`test.toml:13: program.web.sandbox.namespaces[1]: must be one of pid, mount, uts, ipc, net, user (got "time")`,
				`test.toml:13: program.web.sandbox.namespaces[2]: "pid" is listed twice`,
				`test.toml:14: program.web.sandbox.umask: "0999" is not an octal umask between 0000 and 0777 (like "0022")`,
				`test.toml:15: program.web.sandbox.cpu_max: must be a number of cores like 0.5 (got "half")`,
				`test.toml:16: program.web.sandbox.rlimits.bogus: unknown key`,
				`test.toml:16: program.web.sandbox.rlimits.cpu: must be a number or "unlimited" (got "1G")`,
				`test.toml:16: program.web.sandbox.rlimits.nofile: must not be negative (got -1)`,
				`test.toml:16: program.web.sandbox.rlimits.nproc.soft: must not be above hard (10 > 5)`,
			},
		},
		{
			name: "commands",
			src: `[program.a]
command = ""
[program.b]
command = "echo 'unbalanced"
[program.c]
command = "echo $HOME | wc"
[program.d]
command = []
[program.e]
dir = "x"
[program.f]
command = ["ok", 3]
`,
			want: []string{
				`test.toml:2: program.a.command: must not be empty`,
				`test.toml:4: program.b.command: unbalanced ' (single quote)`,
				`test.toml:6: program.c.command: unquoted "$" needs a shell, and commands run without one: quote it, or write command = ["sh", "-c", "echo $HOME | wc"]`,
				`test.toml:8: program.d.command: must not be empty`,
				`test.toml:9: program.e.command: required: give the program a command (a string or an array)`,
				`test.toml:12: program.f.command[1]: must be a string (got integer 3)`,
			},
		},
		{
			name: "names, dependencies and cycles",
			src: `[supervisor]
exit_on = ["web", "nope"]
[program.web]
command = "x"
depends_on = ["db", "wbe", "web"]
[program."bad:name"]
command = "x"
[program.a]
command = "x"
depends_on = ["b"]
[program.b]
command = "x"
depends_on = ["c"]
[program.c]
command = "x"
depends_on = ["a", "c"]
`,
			want: []string{
				`test.toml:2: supervisor.exit_on[1]: unknown program "nope"`,
				`test.toml:5: program.web.depends_on[0]: unknown program "db"`,
				`test.toml:5: program.web.depends_on[1]: unknown program "wbe" (did you mean "web"?)`,
				`test.toml:5: program.web.depends_on[2]: dependency cycle: web -> web`,
				`test.toml:6: program."bad:name": must not contain ":", which separates the instance number ("web:2")`,
				`test.toml:10: program.a.depends_on[0]: dependency cycle: a -> b -> c -> a`,
			},
		},
		{
			name: "error in defaults is reported once, at defaults",
			src: `[defaults]
restart = "sometimes"
stop_timeout = 10
[program.a]
command = "a"
[program.b]
command = "b"
`,
			want: []string{
				`test.toml:2: defaults.restart: must be one of always, on-failure, never (got "sometimes")`,
				`test.toml:3: defaults.stop_timeout: must be a duration string like "10s" (got integer 10)`,
			},
		},
		{
			name: "hooks and outputs",
			src: `[program.web]
command = "x"
stdout = { file = "a.log", max_size = 100, max_files = 0 }
[program.web.hooks.pre_start]
command = "x"
http = "http://a/"
[program.web.hooks.post_start]
timeout = "0s"
[program.web.hooks.pre_stop]
http = { url = "ftp://a/", method = "FETCH", expect_status = 42 }
[program.web.hooks.later]
command = "x"
[program.web.hooks.post_stop]
sleep = "1m"
[program.other]
command = "x"
hooks.pre_stop = { http = "http://a/", sleep = "1s" }
hooks.post_stop = { sleep = "0s" }
hooks.pre_start = { sleep = 5 }
`,
			want: []string{
				`test.toml:3: program.web.stdout.max_files: must be between 1 and 1000 (got 0)`,
				`test.toml:3: program.web.stdout.max_size: must be at least 4KiB (got 100 bytes)`,
				`test.toml:6: program.web.hooks.pre_start.http: a hook is one of a command, an http request and a sleep`,
				`test.toml:7: program.web.hooks.post_start: needs a command, an http request or a sleep`,
				`test.toml:8: program.web.hooks.post_start.timeout: must be more than 0`,
				`test.toml:10: program.web.hooks.pre_stop.http.expect_status: must be between 100 and 599 (got 42)`,
				`test.toml:10: program.web.hooks.pre_stop.http.method: must be an HTTP method like GET or POST (got "FETCH")`,
				`test.toml:10: program.web.hooks.pre_stop.http.url: "ftp://a/" is not an http:// or https:// URL`,
				`test.toml:11: program.web.hooks.later: unknown key (known: pre_start, post_start, pre_stop, post_stop)`,
				`test.toml:14: program.web.hooks.post_stop.sleep: 1m0s is longer than the hook's timeout (30s): raise timeout`,
				`test.toml:17: program.other.hooks.pre_stop.sleep: a hook is one of a command, an http request and a sleep`,
				`test.toml:18: program.other.hooks.post_stop.sleep: must be more than 0`,
				`test.toml:19: program.other.hooks.pre_start.sleep: must be a duration string like "10s" (got integer 5)`,
			},
		},
		{
			name: "two programs, one log file",
			src: `[program.web]
command = "x"
stdout = { file = "a.log" }
stderr = { file = "a.log" }
[program.other]
command = "y"
stderr = { file = "a.log" }
`,
			want: []string{
				`test.toml:7: program.other.stderr.file: ` + filepath.Join(absDir("test.toml"), "a.log") + ` is already the log of program.web.stdout.file: one file per program`,
			},
		},
		{
			name: "types of tables",
			src:  "supervisor = 1\ndefaults = \"x\"\nprogram = [1]\n",
			want: []string{
				`test.toml:1: supervisor: must be a table: [supervisor] (got integer 1)`,
				`test.toml:2: defaults: must be a table of program keys: [defaults] (got "x")`,
				`test.toml:3: program: must be a table of programs: [program.NAME] (got an array)`,
			},
		},
		{
			name: "no programs",
			src:  "[supervisor]\nworkers = 2\n",
			want: []string{`test.toml: program: no programs: add at least one [program.NAME] table with a command`},
		},
		{
			name: "env values",
			src:  "[program.a]\ncommand = \"a\"\nenv = { A = \"${\", B = \"${1X}\", \"C=D\" = \"x\", E = [1] }\n",
			want: []string{
				`test.toml:3: program.a.env."C=D": invalid variable name: must be non-empty, without '=' or NUL`,
				`test.toml:3: program.a.env.A: unterminated "${" in "${" (write $$ for a literal $)`,
				`test.toml:3: program.a.env.B: invalid variable reference "${1X}": want ${NAME}, ${NAME:-default} or another form of docker compose's (write $$ for a literal $)`,
				`test.toml:3: program.a.env.E: must be a string (got an array)`,
			},
		},
		{
			name: "watch",
			src: `[supervisor]
watch_config = "yes"
[program.web]
command = "x"
[program.web.watch]
paths = []
include = ["src/[a-", "ok/**", 3]
exclude = ["", "../up"]
debounce = "-1s"
signal = "HANGUP"
recursive = true
[program.api]
command = "y"
watch = "src"
[program.b]
command = "z"
watch = { paths = ["", "a"], debounce = 5 }
`,
			want: []string{
				`test.toml:2: supervisor.watch_config: must be true or false (got "yes")`,
				`test.toml:6: program.web.watch.paths: must name at least one path (leave paths out to watch the program's dir)`,
				`test.toml:7: program.web.watch.include[0]: "src/[a-": malformed pattern element "[a-" (check [ ] and \)`,
				`test.toml:7: program.web.watch.include[2]: must be a string (got integer 3)`,
				`test.toml:8: program.web.watch.exclude[0]: "": empty pattern`,
				`test.toml:8: program.web.watch.exclude[1]: "../up": ".." cannot match a path inside the watched directory`,
				`test.toml:9: program.web.watch.debounce: must not be negative (got "-1s")`,
				`test.toml:10: program.web.watch.signal: unknown signal "HANGUP" (want a name like TERM, INT, QUIT, HUP, USR1, or a number 1-64)`,
				`test.toml:11: program.web.watch.recursive: unknown key (known: paths, include, exclude, gitignore, debounce, signal)`,
				`test.toml:14: program.api.watch: must be a table like { paths = ["src"], include = ["**/*.go"] } (got "src")`,
				`test.toml:17: program.b.watch.debounce: must be a duration string like "10s" (got integer 5)`,
				`test.toml:17: program.b.watch.paths[0]: must be a non-empty path`,
			},
		},
		{
			name: "syntax error names the line",
			src:  "[program.web]\ncommand = \"x\"\nrestart = \n",
			want: []string{`test.toml:3: program.web.restart: expected value but found '\n' instead`},
		},
		{
			name: "duplicate key is a syntax error",
			src:  "[program.web]\ncommand = \"x\"\ncommand = \"y\"\n",
			want: []string{`test.toml:3: program.web.command: Key 'program.web.command' has already been defined.`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.src)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %d problems:\n  %s\nwant %d:\n  %s", len(got), strings.Join(got, "\n  "), len(tt.want), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

// A file with three different mistakes yields exactly three file:line
// errors, and no config.
func TestThreeMistakes(t *testing.T) {
	src := `[supervisor]
workers = 2

[program.web]
command = "python3 -m http.server 8080"
restart = "sometimes"

[program.worker]
command = "worker"
depends_on = ["db"]
stop_timeout = "soon"
`
	cfg, err := Parse("supervise.toml", []byte(src))
	if cfg != nil {
		t.Errorf("got a config despite errors")
	}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("got %v, want an ErrorList", err)
	}
	want := []string{
		`supervise.toml:6: program.web.restart: must be one of always, on-failure, never (got "sometimes")`,
		`supervise.toml:10: program.worker.depends_on[0]: unknown program "db"`,
		`supervise.toml:11: program.worker.stop_timeout: "soon" is not a duration: want a Go duration like "10s", "1m30s" or "250ms"`,
	}
	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, e := range list {
		if e.File != "supervise.toml" || e.Line == 0 || e.Key == "" || e.Msg == "" {
			t.Errorf("error %d lacks a field: %#v", i, e)
		}
	}
}

func TestExampleConfig(t *testing.T) {
	path := filepath.Join("..", "config.example.toml")
	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("config.example.toml:\n%v", err)
	}
	var names []string
	for _, p := range cfg.Programs {
		names = append(names, p.Name)
	}
	if want := []string{"web", "worker", "ticker", "sandboxed", "report", "manual"}; !reflect.DeepEqual(names, want) {
		t.Errorf("programs = %v, want %v", names, want)
	}
	root, _ := filepath.Abs("..")
	if web := cfg.Program("web"); web.Dir != root || web.Hooks.PreStart == nil || web.Hooks.PostStop == nil ||
		web.Env["APP_ENV"] != "example" || web.Env["PORT"] != "8080" {
		t.Errorf("web = %+v", web)
	}
	if sb := cfg.Program("sandboxed").Sandbox; sb.MemoryMax != 64<<20 || sb.PidsMax != 32 || sb.Hostname != "sandboxed" {
		t.Errorf("sandboxed sandbox = %+v", sb)
	}
	// Every key the package knows appears in the example, live or commented.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range keyTables() {
		for _, k := range table.names {
			shown := strings.Contains(string(data), k+" =") || strings.Contains(string(data), "."+k+"]") || strings.Contains(string(data), "."+k+".")
			if strings.HasSuffix(table.path, ".rlimits") {
				// The resources are listed by name in a comment.
				shown = regexp.MustCompile(`(?m)^# .*\b` + k + `\b`).Match(data)
			}
			if !shown {
				t.Errorf("config.example.toml does not show key %s.%s", table.path, k)
			}
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("app.env", "# app\nexport DB_URL=postgres://x\nSHARED=from-file\n")
	path := write("supervise.toml", `
[program.api]
command = "api"
env_file = "app.env"
env = { SHARED = "from-toml" }
`)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	api := cfg.Program("api")
	if want := map[string]string{"DB_URL": "postgres://x", "SHARED": "from-toml"}; !reflect.DeepEqual(api.Env, want) {
		t.Errorf("env = %v, want %v (env over env_file)", api.Env, want)
	}
	if want := []string{filepath.Join(dir, "app.env")}; !reflect.DeepEqual(api.EnvFiles, want) {
		t.Errorf("EnvFiles = %v, want %v", api.EnvFiles, want)
	}

	// A broken or missing env_file is an error at the env_file key.
	write("bad.env", "OK=1\nnot a line\n")
	path = write("bad.toml", "[program.api]\ncommand = \"api\"\nenv_file = [\"bad.env\", \"missing.env\"]\n")
	_, err = Load(path)
	want := path + ":3: program.api.env_file[0]: " + filepath.Join(dir, "bad.env") + `:2: want KEY=VALUE (no "=" on this line)` + "\n" +
		path + ":3: program.api.env_file[1]: " + filepath.Join(dir, "missing.env") + ": cannot read: no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}

	if _, err := Load(filepath.Join(dir, "nope.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v, want ErrNotExist", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: got %v", err)
	}
}

func TestParseWatchDefaults(t *testing.T) {
	cfg := mustParse(t, `
[defaults]
watch = { exclude = ["*.log"] }

[program.web]
command = "server"
dir = "web"

[program.api]
command = "api"
[program.api.watch]
paths = "lib"
debounce = "0s"
`)
	web, api := cfg.Program("web"), cfg.Program("api")
	want := &Watch{Paths: []string{"/etc/sv/web"}, Exclude: []string{"*.log"}, Debounce: DefaultWatchDebounce}
	if !reflect.DeepEqual(web.Watch, want) {
		t.Errorf("web watch = %+v, want %+v (paths default to the program's dir)", web.Watch, want)
	}
	want = &Watch{Paths: []string{"/etc/sv/lib"}, Exclude: []string{"*.log"}}
	if !reflect.DeepEqual(api.Watch, want) {
		t.Errorf("api watch = %+v, want %+v (merged with defaults; 0s kept)", api.Watch, want)
	}
	if !cfg.Supervisor.WatchConfig {
		t.Error("watch_config defaults to true")
	}
	if p := mustParse(t, "[program.a]\ncommand = \"a\"\n").Programs[0]; p.Watch != nil {
		t.Errorf("no watch table: Watch = %+v, want nil", p.Watch)
	}
}

func TestParseLogRing(t *testing.T) {
	cfg := mustParse(t, "[supervisor]\nlog_ring = \"1MiB\"\n[program.w]\ncommand = \"w\"\n")
	if cfg.Supervisor.LogRing != 1<<20 {
		t.Errorf("LogRing = %d, want 1 MiB", cfg.Supervisor.LogRing)
	}
	for _, bad := range []string{`"1KiB"`, `"1GiB"`, `"lots"`, `true`} {
		_, err := Parse("/etc/sv/test.toml", []byte("[supervisor]\nlog_ring = "+bad+"\n[program.w]\ncommand = \"w\"\n"))
		if err == nil || !strings.Contains(err.Error(), "test.toml:2: supervisor.log_ring:") {
			t.Errorf("log_ring = %s: got %v, want an error at test.toml:2", bad, err)
		}
	}
}

func TestParseConnectionLimits(t *testing.T) {
	cfg := mustParse(t, "[program.w]\ncommand = \"w\"\n")
	if cfg.Supervisor.MaxConnections != DefaultMaxConnections || cfg.Supervisor.MaxFollowers != DefaultMaxFollowers {
		t.Errorf("defaults: %d %d", cfg.Supervisor.MaxConnections, cfg.Supervisor.MaxFollowers)
	}
	cfg = mustParse(t, "[supervisor]\nmax_connections = 32\nmax_followers = 8\n[program.w]\ncommand = \"w\"\n")
	if cfg.Supervisor.MaxConnections != 32 || cfg.Supervisor.MaxFollowers != 8 {
		t.Errorf("set: %d %d", cfg.Supervisor.MaxConnections, cfg.Supervisor.MaxFollowers)
	}
	for _, tc := range []struct{ src, want string }{
		{"max_connections = 0", "test.toml:2: supervisor.max_connections: must be between 4 and 65536"},
		{"max_followers = \"x\"", "test.toml:2: supervisor.max_followers: must be an integer"},
		{"max_connections = 8\nmax_followers = 8", "test.toml:3: supervisor.max_followers: must be below max_connections (8)"},
	} {
		_, err := Parse("/etc/sv/test.toml", []byte("[supervisor]\n"+tc.src+"\n[program.w]\ncommand = \"w\"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.src, err, tc.want)
		}
	}
}

func TestParseHTTP(t *testing.T) {
	if cfg := mustParse(t, "[program.w]\ncommand = \"w\"\n"); cfg.Supervisor.HTTP != "" {
		t.Errorf("default http = %q, want off", cfg.Supervisor.HTTP)
	}
	for _, ok := range []string{"127.0.0.1:9100", ":9100", "[::1]:0", "localhost:80"} {
		if cfg := mustParse(t, "[supervisor]\nhttp = \""+ok+"\"\n[program.w]\ncommand = \"w\"\n"); cfg.Supervisor.HTTP != ok {
			t.Errorf("http = %q: got %q", ok, cfg.Supervisor.HTTP)
		}
	}
	for _, tc := range []struct{ src, want string }{
		{`http = "9100"`, `test.toml:2: supervisor.http: "9100" is not HOST:PORT`},
		{`http = "127.0.0.1:http"`, `test.toml:2: supervisor.http: "127.0.0.1:http": the port must be a number`},
		{`http = "127.0.0.1:70000"`, `the port must be a number from 0 to 65535`},
		{`http = "a b:80"`, `"a b" is neither an IP address nor a host name`},
		{`http = 9100`, `test.toml:2: supervisor.http: must be a string`},
	} {
		_, err := Parse("/etc/sv/test.toml", []byte("[supervisor]\n"+tc.src+"\n[program.w]\ncommand = \"w\"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.src, err, tc.want)
		}
	}
}

// check refuses what run would refuse: a socket path too long for a unix
// socket address, a socket group this machine does not have.
func TestParseSocketCheckedAsRunWould(t *testing.T) {
	long := "/run/" + strings.Repeat("s", 110) + ".sock"
	for _, tc := range []struct{ src, want string }{
		{"socket = \"" + long + "\"", "test.toml:2: supervisor.socket: " + long + " is 120 bytes long"},
		{`socket_group = "no-such-group-here"`, `test.toml:2: supervisor.socket_group: no group "no-such-group-here"`},
	} {
		_, err := Parse("/etc/sv/test.toml", []byte("[supervisor]\n"+tc.src+"\n[program.w]\ncommand = \"w\"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.src, err, tc.want)
		}
	}
	for _, ok := range []string{`socket_group = "0"`, `socket_group = "root"`, `socket = "/run/sv.sock"`} {
		if _, err := Parse("/etc/sv/test.toml", []byte("[supervisor]\n"+ok+"\n[program.w]\ncommand = \"w\"\n")); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

func TestParseDependsOnRestartWith(t *testing.T) {
	cfg := mustParse(t, `
[program.db]
command = "db"
[program.cache]
command = "cache"
[program.migrate]
command = "migrate"
restart = "never"
[program.web]
command = "web"
depends_on = { db = { condition = "running", restart_with = true }, cache = "ready", migrate = { condition = "completed" }, queue = { restart_with = false } }
[program.queue]
command = "queue"
`)
	web := cfg.Program("web")
	for dep, want := range map[string]struct {
		cond string
		with bool
	}{"db": {DependRunning, true}, "cache": {DependReady, false}, "migrate": {DependCompleted, false}, "queue": {DependReady, false}} {
		if c, w := web.DependsOnCondition(dep), web.RestartWith(dep); c != want.cond || w != want.with {
			t.Errorf("%s: condition %q restart_with %v, want %q %v", dep, c, w, want.cond, want.with)
		}
	}
	_, err := Parse("/etc/sv/test.toml", []byte("[program.db]\ncommand = \"db\"\n[program.web]\ncommand = \"web\"\ndepends_on = { db = { restart = true } }\n"))
	if err == nil || !strings.Contains(err.Error(), "test.toml:5: program.web.depends_on.db.restart: unknown key") {
		t.Errorf("an unknown key in a dependency's table: got %v", err)
	}
	_, err = Parse("/etc/sv/test.toml", []byte("[program.db]\ncommand = \"db\"\nrestart = \"never\"\n[program.web]\ncommand = \"web\"\ndepends_on = { db = { condition = \"completed\", restart_with = true } }\n"))
	if err == nil || !strings.Contains(err.Error(), "test.toml:6: program.web.depends_on.db.restart_with:") {
		t.Errorf("restart_with on a dependency waited for to complete: got %v", err)
	}
}

func TestParseRestartRules(t *testing.T) {
	cfg := mustParse(t, `
[program.job]
command = "job"
restart = "never"
restart_rules = [
  { action = "restart", exit_codes = { operator = "In", values = [42, 43] } },
  { exit_codes = { operator = "NotIn", values = [0] } },
]

[program.other]
command = "other"
[[program.other.restart_rules]]
exit_codes = { operator = "In", values = [137] }
`)
	want := []RestartRule{{Action: RuleRestart, Operator: RuleIn, Values: []int{42, 43}}, {Action: RuleRestart, Operator: RuleNotIn, Values: []int{0}}}
	if got := cfg.Program("job").RestartRules; !reflect.DeepEqual(got, want) {
		t.Errorf("job rules = %+v, want %+v", got, want)
	}
	if got := cfg.Program("other").RestartRules; len(got) != 1 || !got[0].Match(137) || got[0].Match(1) {
		t.Errorf("other rules = %+v", got)
	}

	got := problems(t, `[program.job]
command = "job"
restart_rules = [
  { action = "stop", exit_codes = { operator = "In", values = [1] } },
  { exit_codes = { operator = "Maybe", values = [1] } },
  { exit_codes = { operator = "In", values = [] } },
  { exit_codes = { operator = "In", values = [300] } },
  { exit_code = 1 },
]
`)
	// Keys inside an array's inline tables take the line of the first
	// element that has them: the element index in the key says which.
	want2 := []string{
		`test.toml:3: program.job.restart_rules[4]: needs exit_codes = { operator = "In" or "NotIn", values = [...] }`,
		`test.toml:4: program.job.restart_rules[0].action: must be one of restart (got "stop")`,
		`test.toml:4: program.job.restart_rules[1].exit_codes.operator: must be one of In, NotIn (got "Maybe")`,
		`test.toml:4: program.job.restart_rules[2].exit_codes.values: needs values: an array of 1 to 255 exit codes like [42] (a signal N is 128+N)`,
		`test.toml:4: program.job.restart_rules[3].exit_codes.values[0]: must be between 0 and 255 (got 300)`,
		`test.toml:8: program.job.restart_rules[4].exit_code: unknown key (did you mean "exit_codes"?)`,
	}
	if !reflect.DeepEqual(got, want2) {
		t.Errorf("got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want2, "\n  "))
	}
}

// The kubelet's backoff shapes: max alone below the 10s initial lowers the
// initial delay (a node-wide maximum of 1–300s); the reduced curve is
// initial 1s, max 60s.
func TestParseBackoffShapes(t *testing.T) {
	cfg := mustParse(t, `
[defaults.backoff]
max = "5s"

[program.capped]
command = "x"

[program.reduced]
command = "y"
backoff = { initial = "1s", max = "60s" }
`)
	if b := cfg.Program("capped").Backoff; b.Initial != 5*time.Second || b.Max != 5*time.Second || b.ResetAfter != 10*time.Minute {
		t.Errorf("capped backoff = %+v, want initial 5s, max 5s, reset 10m", b)
	}
	if b := cfg.Program("reduced").Backoff; b.Initial != time.Second || b.Max != time.Minute {
		t.Errorf("reduced backoff = %+v, want 1s, 1m", b)
	}
}

func TestRollout(t *testing.T) {
	for _, tt := range []struct {
		toml    string
		want    Rollout
		n, at   int // instances, and the batch size Unavailable gives
		wantErr string
	}{
		{toml: ``, want: Rollout{}, n: 4, at: 1},
		{toml: `max_unavailable = 2`, want: Rollout{MaxUnavailable: 2}, n: 4, at: 2},
		{toml: `max_unavailable = 9`, want: Rollout{MaxUnavailable: 9}, n: 4, at: 4},
		{toml: `max_unavailable = "100%"`, want: Rollout{Percent: 100}, n: 4, at: 4},
		{toml: `max_unavailable = "50%"`, want: Rollout{Percent: 50}, n: 5, at: 2},
		{toml: `max_unavailable = "10%"`, want: Rollout{Percent: 10}, n: 3, at: 1},
		{toml: `timeout = "30s"`, want: Rollout{Timeout: 30 * time.Second}, n: 2, at: 1},
		{toml: `max_unavailable = 0`, wantErr: `program.web.rollout.max_unavailable: must be`},
		{toml: `max_unavailable = "half"`, wantErr: `program.web.rollout.max_unavailable: must be a count like 1 or a percentage like "25%" (got "half")`},
		{toml: `max_unavailable = "0%"`, wantErr: `must be a count like 1 or a percentage`},
		{toml: `max_unavailable = -1`, wantErr: `program.web.rollout.max_unavailable: must be`},
		{toml: `timeout = "0s"`, wantErr: `program.web.rollout.timeout: must be more than 0`},
		{toml: `max_surge = 1`, wantErr: `program.web.rollout.max_surge: unknown key`},
	} {
		cfg, err := Parse("s.toml", []byte("[program.web]\ncommand = \"x\"\ninstances = 4\n[program.web.rollout]\n"+tt.toml+"\n"))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want %q", tt.toml, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.toml, err)
			continue
		}
		r := cfg.Program("web").Rollout
		if r != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.toml, r, tt.want)
		}
		if got := r.Unavailable(tt.n); got != tt.at {
			t.Errorf("%s: Unavailable(%d) = %d, want %d", tt.toml, tt.n, got, tt.at)
		}
	}
}

func TestOutputTimestamps(t *testing.T) {
	cfg, err := Parse("s.toml", []byte("[program.web]\ncommand = \"x\"\n[program.web.stdout]\nfile = \"w.log\"\ntimestamps = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Program("web"); !p.Stdout.Timestamps || p.Stderr.Timestamps {
		t.Fatalf("stdout %+v, stderr %+v", p.Stdout, p.Stderr)
	}
	if _, err := Parse("s.toml", []byte("[program.web]\ncommand = \"x\"\nstdout = { timestamps = \"yes\" }\n")); err == nil ||
		!strings.Contains(err.Error(), "program.web.stdout.timestamps") {
		t.Fatalf("timestamps = \"yes\": %v", err)
	}
}
