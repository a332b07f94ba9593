package export

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
)

// loadImport writes an import as a supervise.toml in dir and loads it as
// `supervise check` does.
func loadImport(t *testing.T, dir string, out []byte) *config.Config {
	t.Helper()
	f := filepath.Join(dir, "supervise.toml")
	if err := os.WriteFile(f, out, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(f)
	if err != nil {
		t.Fatalf("the import does not load: %v\n%s", err, out)
	}
	return cfg
}

func program(cfg *config.Config, name string) *config.Program {
	for _, p := range cfg.Programs {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func noLookup(string) (string, bool) { return "", false }

// Real process-compose files of public projects (each names its source)
// import, and the result passes the validation of `supervise check`.
func TestImportProcessComposeRealFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/process-compose/*.y*ml")
	if err != nil || len(files) < 5 {
		t.Fatalf("want at least 5 real files, have %d (%v)", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(src), "# Source: https://github.com/") {
				t.Errorf("%s does not name its source on its first line", f)
			}
			out, ws, err := ImportProcessCompose(f, src, ProcessComposeOptions{Lookup: noLookup})
			if err != nil {
				t.Fatal(err)
			}
			cfg := loadImport(t, t.TempDir(), out)
			if len(cfg.Programs) == 0 {
				t.Fatalf("no programs:\n%s", out)
			}
			for _, w := range ws {
				if w.Key == "" || w.Why == "" {
					t.Errorf("a warning without its key or reason: %+v", w)
				}
			}
		})
	}
	// what the files say, as supervise has it
	out, _, err := ImportProcessComposeFile("testdata/process-compose/flomp-wanderer.yml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := loadImport(t, t.TempDir(), out)
	web := program(cfg, "web")
	if web == nil || !slices.Equal(web.Command, []string{"bash", "-c", "npm run dev"}) || web.Dir != filepath.Join(cfg.Dir, "web") {
		t.Errorf("web: %+v", web)
	}
	want := map[string]string{"web-build": "completed", "db": "ready", "meilisearch": "ready"}
	if web != nil && !mapsEqual(web.DependsOnCond, want) {
		t.Errorf("web depends on %v, want %v", web.DependsOnCond, want)
	}
	if web != nil && web.Env["MEILI_URL"] != "http://127.0.0.1:7700" {
		t.Errorf("web env %v lacks the file's environment", web.Env)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Every key process-compose reads: mapped (the test says to what) or
// warned (naming the process and the key).
func TestImportProcessComposeKeys(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string                      // processes under "processes:", or a whole file when it starts with "!"
		check func(*config.Config) string // "" when right
		warn  string                      // a warning containing this, "" for none about p
	}{
		{"command through bash -c", "p:\n  command: echo $HOME && exit 3\n", func(c *config.Config) string {
			return want(program(c, "p").Command, []string{"bash", "-c", "echo $HOME && exit 3"})
		}, ""},
		{"$$ is process-compose's literal $, left to the shell", "p:\n  command: echo $$X\n", func(c *config.Config) string {
			return want(program(c, "p").Command, []string{"bash", "-c", "echo $X"})
		}, ""},
		{"shell", "!shell:\n  shell_command: sh\n  shell_argument: -ec\nprocesses:\n  p:\n    command: true\n", func(c *config.Config) string {
			return want(program(c, "p").Command, []string{"sh", "-ec", "true"})
		}, ""},
		{"entrypoint as argv", "p:\n  entrypoint: [/bin/echo, a b, $$c]\n", func(c *config.Config) string {
			return want(program(c, "p").Command, []string{"/bin/echo", "a b", "$c"})
		}, ""},
		{"command wins over entrypoint", "p:\n  command: a\n  entrypoint: [b]\n", func(c *config.Config) string {
			return want(program(c, "p").Command, []string{"bash", "-c", "a"})
		}, "entrypoint: not imported"},
		{"working_dir", "p:\n  command: a\n  working_dir: /srv/x\n", func(c *config.Config) string {
			return want(program(c, "p").Dir, "/srv/x")
		}, ""},
		{"working_dir's $VAR fixed at import", "p:\n  command: a\n  working_dir: ${NOPE:-/srv}/y\n", func(c *config.Config) string {
			return want(program(c, "p").Dir, "/srv/y")
		}, "working_dir: ${NOPE:-/srv} fixed at import"},
		{"environment list, $VAR for supervise's expansion", "p:\n  command: a\n  environment:\n    - A=1\n    - B=x=y\n    - C=$HOME/z\n    - D=$$HOME\n", func(c *config.Config) string {
			e := program(c, "p").Env
			return want([]string{e["A"], e["B"], e["C"], e["D"]}, []string{"1", "x=y", os.Getenv("HOME") + "/z", "$HOME"})
		}, ""},
		{"environment entry without =", "p:\n  command: a\n  environment: [JUSTNAME]\n", nil, `environment: not imported: "JUSTNAME" is not NAME=value`},
		{"global environment, the process's own over it", "!environment: [G=1, O=global]\nprocesses:\n  p:\n    command: a\n    environment: [O=own]\n", func(c *config.Config) string {
			e := program(c, "p").Env
			return want([]string{e["G"], e["O"]}, []string{"1", "own"})
		}, ""},
		{"PC_PROC_NAME and PC_REPLICA_NUM", "p:\n  command: a\n", func(c *config.Config) string {
			e := program(c, "p").Env
			return want([]string{e["PC_PROC_NAME"], e["PC_REPLICA_NUM"]}, []string{"p", "0"})
		}, ""},
		{"depends_on conditions", "d1:\n  command: a\nd2:\n  command: a\n  readiness_probe: {exec: {command: 'true'}}\nd3:\n  command: a\nd4:\n  command: a\n  ready_log_line: up\np:\n  command: a\n  depends_on:\n    d1: {condition: process_started}\n    d2: {condition: process_healthy}\n    d3: {condition: process_completed_successfully}\n    d4: {condition: process_log_ready}\n", func(c *config.Config) string {
			return wantMap(program(c, "p").DependsOnCond, map[string]string{"d1": "running", "d2": "ready", "d3": "completed", "d4": "ready"})
		}, ""},
		{"depends_on short form and no condition", "d1:\n  command: a\nd2:\n  command: a\np:\n  command: a\n  depends_on:\n    d1: process_completed_successfully\n    d2: {}\n", func(c *config.Config) string {
			return wantMap(program(c, "p").DependsOnCond, map[string]string{"d1": "completed", "d2": "running"})
		}, ""},
		{"process_completed is a successful exit here", "d:\n  command: a\np:\n  command: a\n  depends_on: {d: {condition: process_completed}}\n", func(c *config.Config) string {
			return wantMap(program(c, "p").DependsOnCond, map[string]string{"d": "completed"})
		}, "depends_on.d: process_completed becomes completed"},
		{"completed on a dependency that restarts always", "d:\n  command: a\n  availability: {restart: always}\np:\n  command: a\n  depends_on: {d: {condition: process_completed_successfully}}\n", func(c *config.Config) string {
			return wantMap(program(c, "p").DependsOnCond, map[string]string{"d": "running"})
		}, "restarts always and never completes"},
		{"depends_on an unknown process", "p:\n  command: a\n  depends_on: {ghost: {condition: process_started}}\n", func(c *config.Config) string {
			return want(len(program(c, "p").DependsOn), 0)
		}, `depends_on.ghost: not imported: no process "ghost"`},
		{"readiness exec probe and timings", "p:\n  command: a\n  readiness_probe:\n    exec: {command: test -f x}\n    initial_delay_seconds: 2\n    period_seconds: 3\n    timeout_seconds: 4\n    success_threshold: 2\n    failure_threshold: 5\n", func(c *config.Config) string {
			r := program(c, "p").Probes.Readiness
			if r == nil {
				return "no readiness probe"
			}
			return want([]any{r.Command, r.InitialDelay, r.Period, r.Timeout, r.SuccessThreshold, r.FailureThreshold},
				[]any{[]string{"bash", "-c", "test -f x"}, 2 * time.Second, 3 * time.Second, 4 * time.Second, 2, 5})
		}, "readiness_probe: failing, it marks the program not ready"},
		{"liveness http_get probe", "p:\n  command: a\n  liveness_probe:\n    http_get: {host: localhost, scheme: https, path: health, port: 8443, status_code: 204, headers: {X-A: [b]}}\n    success_threshold: 3\n", func(c *config.Config) string {
			l := program(c, "p").Probes.Liveness
			if l == nil || l.HTTP == nil {
				return "no liveness http probe"
			}
			return want([]any{l.HTTP.URL, l.HTTP.ExpectStatus, l.HTTP.Headers["X-A"], l.SuccessThreshold}, []any{"https://localhost:8443/health", 204, "b", 1})
		}, "liveness_probe.success_threshold: not imported"},
		{"a liveness probe restarts", "p:\n  command: a\n  liveness_probe: {exec: {command: 'true'}}\n", func(c *config.Config) string {
			l := program(c, "p").Probes.Liveness
			if l == nil {
				return "no liveness probe"
			}
			return want(l.Command, []string{"bash", "-c", "true"})
		}, "liveness_probe: failing, it restarts the program"},
		{"http_get defaults", "p:\n  command: a\n  readiness_probe: {http_get: {port: 80}}\n", func(c *config.Config) string {
			r := program(c, "p").Probes.Readiness
			if r == nil || r.HTTP == nil {
				return "no readiness http probe"
			}
			return want([]any{r.HTTP.URL, r.HTTP.ExpectStatus, r.Period, r.FailureThreshold}, []any{"http://127.0.0.1:80/", 200, 10 * time.Second, 3})
		}, ""},
		{"http_get port from the environment, fixed", "p:\n  command: a\n  readiness_probe: {http_get: {port: $NOPORT}}\n", func(c *config.Config) string {
			r := program(c, "p").Probes.Readiness
			if r == nil || r.HTTP == nil {
				return "no readiness http probe"
			}
			return want(r.HTTP.URL, "http://127.0.0.1/")
		}, "$NOPORT fixed at import"},
		{"probe timings below their minimum take the defaults", "p:\n  command: a\n  readiness_probe:\n    exec: {command: x}\n    initial_delay_seconds: 0\n    period_seconds: 0\n    timeout_seconds: -1\n    success_threshold: 1\n    failure_threshold: 0\n", func(c *config.Config) string {
			r := program(c, "p").Probes.Readiness
			if r == nil {
				return "no readiness probe"
			}
			return want([]any{r.InitialDelay, r.Period, r.SuccessThreshold, r.FailureThreshold}, []any{time.Duration(0), 10 * time.Second, 1, 3})
		}, ""},
		{"a probe's exec keys", "p:\n  command: a\n  readiness_probe:\n    exec: {command: x, working_dir: /tmp, user: root}\n", func(c *config.Config) string {
			return want(program(c, "p").Probes.Readiness != nil, true)
		}, "readiness_probe.exec.working_dir: not imported: a probe command runs in the program's dir"},
		{"a probe's exec without a command", "p:\n  command: a\n  readiness_probe:\n    exec: {command: ' ', user: root}\n", func(c *config.Config) string {
			return want(program(c, "p").Probes.Readiness == nil, true)
		}, "readiness_probe: not imported: neither an exec command nor an http_get"},
		{"http_get with an IPv6 host, an unknown key and a status past 400", "p:\n  command: a\n  readiness_probe: {http_get: {host: '::1', path: /h, status_code: 500, timeout: 3, headers: {X-A: [b, c]}}}\n", func(c *config.Config) string {
			r := program(c, "p").Probes.Readiness
			if r == nil || r.HTTP == nil {
				return "no readiness http probe"
			}
			return want([]any{r.HTTP.URL, r.HTTP.ExpectStatus, r.HTTP.Headers["X-A"]}, []any{"http://[::1]/h", 200, "b, c"})
		}, "readiness_probe.http_get.timeout: not imported"},
		{"http_get with a port that is no port", "p:\n  command: a\n  readiness_probe: {http_get: {num_port: http}}\n", func(c *config.Config) string {
			r := program(c, "p").Probes.Readiness
			if r == nil || r.HTTP == nil {
				return "no readiness http probe"
			}
			return want(r.HTTP.URL, "http://127.0.0.1/")
		}, `readiness_probe.http_get.port: "http" is not a port`},
		{"http_get with a scheme supervise cannot send", "p:\n  command: a\n  readiness_probe: {http_get: {scheme: ftp, port: 21}}\n", func(c *config.Config) string {
			return want(program(c, "p").Probes.Readiness == nil, true)
		}, `readiness_probe.http_get: not imported: "ftp://127.0.0.1:21/" is not an http:// or https:// URL`},
		{"a probe of neither kind", "p:\n  command: a\n  readiness_probe: {grpc: {port: 1}}\n", func(c *config.Config) string {
			return want(program(c, "p").Probes.Readiness == nil, true)
		}, "readiness_probe.grpc: not imported"},
		{"ready_log_line is a substring", "p:\n  command: a\n  ready_log_line: listening on :80 (v1.2)\n", func(c *config.Config) string {
			return want(program(c, "p").ReadyLogLine, `listening on :80 \(v1\.2\)`)
		}, ""},
		{"ready_log_line with a readiness probe", "p:\n  command: a\n  ready_log_line: up\n  readiness_probe: {exec: {command: 'true'}}\n", func(c *config.Config) string {
			return want(program(c, "p").ReadyLogLine, "")
		}, "ready_log_line: not imported"},
		{"restart always, backoff", "p:\n  command: a\n  availability: {restart: always, backoff_seconds: 4}\n", func(c *config.Config) string {
			p := program(c, "p")
			return want([]any{p.Restart, p.Backoff.Initial, p.Backoff.Max}, []any{config.RestartAlways, 4 * time.Second, 4 * time.Second})
		}, ""},
		{"restart on_failure, default backoff 1s", "p:\n  command: a\n  availability: {restart: on_failure}\n", func(c *config.Config) string {
			p := program(c, "p")
			return want([]any{p.Restart, p.Backoff.Initial, p.Backoff.Max}, []any{config.RestartOnFailure, time.Second, time.Second})
		}, ""},
		{"restart no (the default)", "p:\n  command: a\n  availability: {restart: \"no\"}\n", func(c *config.Config) string {
			return want(program(c, "p").Restart, config.RestartNever)
		}, ""},
		{"exit_on_failure", "p:\n  command: a\n  availability: {restart: exit_on_failure}\n", func(c *config.Config) string {
			p := program(c, "p")
			return want([]any{p.Restart, p.Critical}, []any{config.RestartNever, false})
		}, "availability.restart: exit_on_failure becomes"},
		{"max_restarts", "p:\n  command: a\n  availability: {restart: always, max_restarts: 3}\n", nil, "availability.max_restarts: not imported"},
		{"exit_on_end is critical", "p:\n  command: a\n  availability: {exit_on_end: true}\n", func(c *config.Config) string {
			return want(program(c, "p").Critical, true)
		}, ""},
		{"exit_on_skipped", "p:\n  command: a\n  availability: {exit_on_skipped: true}\n", nil, "availability.exit_on_skipped: not imported"},
		{"shutdown signal and timeout", "p:\n  command: a\n  shutdown: {signal: 2, timeout_seconds: 7}\n", func(c *config.Config) string {
			p := program(c, "p")
			return want([]any{p.StopSignal, p.StopTimeout}, []any{syscall.SIGINT, 7 * time.Second})
		}, ""},
		{"shutdown command is pre_stop", "p:\n  command: a\n  shutdown: {command: docker stop x, timeout_seconds: 5}\n", func(c *config.Config) string {
			h := program(c, "p").Hooks.PreStop
			if h == nil {
				return "no pre_stop"
			}
			return want([]any{h.Command, h.Timeout}, []any{[]string{"bash", "-c", "docker stop x"}, 5 * time.Second})
		}, "shutdown.command: runs as the pre_stop hook"},
		{"shutdown parent_only", "p:\n  command: a\n  shutdown: {parent_only: yes}\n", nil, "shutdown.parent_only: not imported"},
		{"replicas are instances", "p:\n  command: echo {{.PC_REPLICA_NUM}}\n  replicas: 3\n", func(c *config.Config) string {
			p := program(c, "p")
			return want([]any{p.Instances, p.Command[2], p.Env["PC_REPLICA_NUM"]}, []any{3, "echo ${SUPERVISE_INSTANCE}", ""})
		}, "replicas: each instance gets SUPERVISE_INSTANCE"},
		{"disabled is not autostarted", "p:\n  command: a\n  disabled: true\n", func(c *config.Config) string {
			return want(program(c, "p").Autostart, false)
		}, ""},
		{"is_daemon", "p:\n  command: a\n  is_daemon: true\n", nil, "is_daemon: supervise supervises the process it starts"},
		{"log_location and rotation", "p:\n  command: a\n  log_location: logs/p.log\n  log_configuration:\n    rotation: {max_size_mb: 3, max_backups: 2, compress: true}\n    add_timestamp: true\n    no_color: true\n", func(c *config.Config) string {
			p := program(c, "p")
			f := filepath.Join(c.Dir, "logs/p.log")
			return want([]any{p.Stdout.File, p.StderrToStdout, p.Stdout.MaxSize, p.Stdout.MaxFiles, p.Stdout.Timestamps}, []any{f, true, int64(3 << 20), 2, true})
		}, "log_configuration.rotation.compress: not imported"},
		{"log_configuration alone", "p:\n  command: a\n  log_configuration: {add_timestamp: true}\n", nil, "log_configuration: not imported: without log_location"},
		{"namespace", "p:\n  command: a\n  namespace: ns\n", nil, "namespace: not imported"},
		{"is_foreground", "p:\n  command: a\n  is_foreground: true\n", nil, "is_foreground: not imported"},
		{"is_tty", "p:\n  command: a\n  is_tty: true\n", nil, "is_tty: not imported"},
		{"is_elevated", "p:\n  command: a\n  is_elevated: true\n", nil, "is_elevated: not imported"},
		{"is_daemon false", "p:\n  command: a\n  is_daemon: false\n  is_tty: no\n  is_elevated: false\n  is_interactive: false\n", nil, ""},
		{"is_interactive", "p:\n  command: a\n  is_interactive: true\n", nil, "is_interactive: not imported: supervise gives a program no terminal"},
		{"disable_ansi_colors", "p:\n  command: a\n  disable_ansi_colors: true\n", nil, "disable_ansi_colors: not imported: supervise passes"},
		{"launch_timeout_seconds", "p:\n  command: a\n  launch_timeout_seconds: 5\n", nil, "launch_timeout_seconds: not imported: it is for daemons"},
		{"an extension key is ignored", "p:\n  command: a\n  x-team: web\n", nil, ""},
		{"an unknown key", "p:\n  command: a\n  colour: red\n", nil, "colour: not imported: no supervise equivalent"},
		{"log_location with replicas", "p:\n  command: a\n  replicas: 2\n  log_location: p.log\n", nil, "log_location: the instances share one file"},
		{"an empty log_location", "p:\n  command: a\n  log_location: ''\n", func(c *config.Config) string {
			return want(program(c, "p").Stdout.File, "")
		}, ""},
		{"an empty ready_log_line", "p:\n  command: a\n  ready_log_line: ''\n", func(c *config.Config) string {
			return want(program(c, "p").ReadyLogLine, "")
		}, ""},
		{"description is a comment", "p:\n  command: a\n  description: the web server\n", func(c *config.Config) string {
			return want(program(c, "p") != nil, true)
		}, ""},
		{"vars templates", "!vars: {A: one, N: 2}\nprocesses:\n  p:\n    vars: {A: own}\n    command: echo {{.A}} {{ .N }} {{ \"{{.Raw}}\" }}\n    working_dir: /d/{{.N}}\n", func(c *config.Config) string {
			p := program(c, "p")
			return want([]any{p.Command[2], p.Dir}, []any{"echo own 2 {{.Raw}}", "/d/2"})
		}, ""},
		{"a template action beyond {{.NAME}}", "p:\n  command: echo {{if .X}}x{{end}}\n", func(c *config.Config) string {
			return want(program(c, "p").Command[2], "echo {{if .X}}x{{end}}")
		}, "kept as written: only {{.NAME}} of vars is replaced"},
		{"file keys process-compose alone reads", "!version: '0.5'\nis_strict: true\nis_tui_disabled: true\nordered_shutdown: true\nx-team: web\nprocesses:\n  p:\n    command: a\n", nil, ""},
		{"process-compose's own log", "!log_level: debug\nlog_location: pc.log\nprocesses:\n  p:\n    command: a\n", nil, "log_level: not imported: process-compose's own log"},
		{"extends", "!extends: base.yaml\nprocesses:\n  p:\n    command: a\n", nil, "extends: not imported: the file it extends is not read"},
		{"env_cmds", "!env_cmds: {A: date}\nprocesses:\n  p:\n    command: a\n", nil, "env_cmds: not imported: supervise runs no command"},
		{"an unknown file key", "!colour: red\nprocesses:\n  p:\n    command: a\n", nil, "colour: not imported: no supervise equivalent"},
		{"disable_env_expansion", "!disable_env_expansion: true\nprocesses:\n  p:\n    command: echo $$X\n    environment: ['A=${HOME}']\n", func(c *config.Config) string {
			p := program(c, "p")
			return want([]any{p.Command[2], p.Env["A"]}, []any{"echo $$X", "${HOME}"})
		}, ""},
		{"a name supervise cannot take is renamed", "\"a b\":\n  command: a\n", func(c *config.Config) string {
			return want(program(c, "a-b") != nil, true)
		}, "renamed to a-b"},
		{"anchors and merge keys", "!x-base: &base\n  availability: {restart: always}\n  environment: [B=1]\nprocesses:\n  p:\n    <<: *base\n    command: a\n    environment: [B=2]\n", func(c *config.Config) string {
			p := program(c, "p")
			return want([]any{p.Restart, p.Env["B"]}, []any{config.RestartAlways, "2"})
		}, ""},
		{"an unknown key", "p:\n  command: a\n  ports: [\"80:80\"]\n", nil, "ports: not imported: no supervise equivalent"},
		{"x- extension keys are ignored", "p:\n  command: a\n  x-note: hi\n", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "processes:\n" + indent(tc.yaml)
			if strings.HasPrefix(tc.yaml, "!") {
				src = tc.yaml[1:]
			}
			out, ws, err := ImportProcessCompose("process-compose.yaml", []byte(src), ProcessComposeOptions{Lookup: noLookup})
			if err != nil {
				t.Fatalf("import: %v\n%s", err, src)
			}
			cfg := loadImport(t, t.TempDir(), out)
			if tc.check != nil {
				if msg := tc.check(cfg); msg != "" {
					t.Errorf("%s\n%s", msg, out)
				}
			}
			var about []string
			for _, w := range ws {
				if w.Program != "" && w.Program != "p" && !strings.Contains(tc.warn, w.Key) {
					continue // a warning about another process of the case
				}
				if w.Key == "readiness_probe" && !strings.Contains(tc.warn, "readiness_probe:") {
					continue // every readiness probe has it
				}
				about = append(about, w.String())
			}
			switch {
			case tc.warn == "" && len(about) > 0:
				t.Errorf("unexpected warnings %q", about)
			case tc.warn != "" && !slices.ContainsFunc(about, func(s string) bool { return strings.Contains(s, tc.warn) }):
				t.Errorf("no warning with %q among %q", tc.warn, about)
			}
		})
	}
}

func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "")
}

func want[T any](got, wanted T) string {
	if g, w := sprint(got), sprint(wanted); g != w {
		return "got " + g + ", want " + w
	}
	return ""
}

func wantMap(got, wanted map[string]string) string {
	if !mapsEqual(got, wanted) {
		return "got " + sprint(got) + ", want " + sprint(wanted)
	}
	return ""
}

// The .env beside the file reaches every program (env_file), and a value
// of the file that names one of its variables is fixed from it, as
// process-compose substitutes the .env's values into the file.
func TestImportProcessComposeDotEnv(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("ROOT=/opt/app\nTOKEN='s3cret'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pc := filepath.Join(dir, "process-compose.yaml")
	src := "environment:\n  - APP=${ROOT}/bin\nprocesses:\n  p:\n    command: run $TOKEN\n    working_dir: $ROOT\n"
	if err := os.WriteFile(pc, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := ImportProcessComposeFile(pc, dir)
	if err != nil {
		t.Fatal(err)
	}
	p := program(loadImport(t, dir, out), "p")
	if msg := want([]any{p.Env["TOKEN"], p.Env["APP"], p.Dir, p.Command[2]}, []any{"s3cret", "/opt/app/bin", "/opt/app", "run $TOKEN"}); msg != "" {
		t.Errorf("%s\n%s", msg, out)
	}
	if !strings.Contains(string(out), `env_file = [".env"]`) {
		t.Errorf("no env_file naming the .env:\n%s", out)
	}
}

// The file is read as process-compose would find it, and bounded as the
// supervisord importer's input.
func TestImportProcessComposeFindAndBounds(t *testing.T) {
	dir := t.TempDir()
	if _, err := FindProcessCompose(dir); err == nil {
		t.Error("found a file in an empty directory")
	}
	for _, n := range []string{"process-compose.yaml", "process-compose.yml"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("processes: {p: {command: a}}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if f, err := FindProcessCompose(dir); err != nil || filepath.Base(f) != "process-compose.yml" {
		t.Errorf("found %q, %v; want process-compose.yml, process-compose's first choice of the two", f, err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ImportProcessComposeFile(filepath.Join(dir, "fifo.yaml"), dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("processes: {p: {command: a}}\n"+strings.Repeat("# padding\n", 110000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ImportProcessComposeFile(big, dir); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a file past 1 MiB: %v", err)
	}
}

// Errors name the file and line.
func TestImportProcessComposeErrors(t *testing.T) {
	for src, wantErr := range map[string]string{
		"":                                    "an empty file",
		"services: {web: {image: x}}\n":       "1: no processes",
		"processes:\n  p:\n    command: ''\n": `2: process "p": no command`,
		"processes:\n  p: {command: a}\n  p: {command: b}\n":             `3: processes: key "p" is already defined at line 2`,
		"processes:\n  p:\n    command: a\n    shutdown: {signal: 99}\n": `4: process "p": "99" is not a signal number`,
		"processes: [a, b]\n":                  "1: processes: must be a mapping",
		"processes:\n  p:\n    command: [a]\n": `3: process "p": command: must be a single value`,
		"a: [\n":                               "yaml:",
		"processes:\n  p:\n    command: a\n    liveness_probe:\n      exec: {command: x}\n      period_seconds: soon\n": `6: process "p": "soon" is not a number`,
	} {
		_, _, err := ImportProcessCompose("pc.yaml", []byte(src), ProcessComposeOptions{Lookup: noLookup})
		if err == nil || !strings.Contains(err.Error(), "pc.yaml") || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: error %v, want one naming pc.yaml and saying %q", src, err, wantErr)
		}
	}
}

// A YAML alias bomb ("billion laughs") is refused at once: the parser
// keeps aliases as references and the importer bounds following them.
func TestImportProcessComposeAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("x-a0: &a0 [\"A=1\"]\n")
	for i := 1; i <= 30; i++ {
		b.WriteString("x-a" + itoa(i) + ": &a" + itoa(i) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + itoa(i-1))
		}
		b.WriteString("]\n")
	}
	// a merge-key bomb too: each level merges the one below ten times
	b.WriteString("x-m0: &m0 {command: a}\n")
	for i := 1; i <= 30; i++ {
		b.WriteString("x-m" + itoa(i) + ": &m" + itoa(i) + " {<<: [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*m" + itoa(i-1))
		}
		b.WriteString("]}\n")
	}
	for _, procs := range []string{
		"processes:\n  p:\n    command: a\n    environment: *a30\n",
		"processes:\n  p: *m30\n",
	} {
		var before, after runtimeMem
		before.read()
		start := time.Now()
		_, _, err := ImportProcessCompose("bomb.yaml", []byte(b.String()+procs), ProcessComposeOptions{Lookup: noLookup})
		took := time.Since(start)
		after.read()
		if err == nil {
			t.Errorf("%s: the alias bomb was imported", procs)
		}
		// bounds only a hang or a blow-up, never the machine's speed
		if took > 30*time.Second || after.alloc-before.alloc > 200<<20 {
			t.Errorf("%s: took %v and %d MiB", procs, took, (after.alloc-before.alloc)>>20)
		}
		t.Logf("%s: refused in %v, %d KiB allocated: %v", strings.TrimSpace(procs), took, (after.alloc-before.alloc)>>10, err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func sprint(v any) string { return fmt.Sprintf("%#v", v) }

type runtimeMem struct{ alloc uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.alloc = s.TotalAlloc
}

// An anchor whose mapping merges itself (it recursed until the stack
// overflowed, which kills the process) and other self-references are
// refused with an error.
func TestImportProcessComposeAliasCycle(t *testing.T) {
	for src, wantErr := range map[string]string{
		"x: &a {<<: *a}\nprocesses: {p: *a}\n":                         "merge keys nested more than",
		"x: &a {<<: [*a, *a]}\nprocesses: {p: {<<: *a, command: b}}\n": "merge keys nested more than",
		"processes: &a {p: {command: a, depends_on: *a}}\n":            "",
		"processes:\n  p: &a\n    command: a\n    environment: [*a]\n": "environment: must be a single value",
	} {
		done := make(chan error, 1)
		go func() {
			_, _, err := ImportProcessCompose("cycle.yaml", []byte(src), ProcessComposeOptions{Lookup: noLookup})
			done <- err
		}()
		select {
		case err := <-done:
			if wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)) {
				t.Errorf("%q: %v, want an error saying %q", src, err, wantErr)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%q: no answer in 60s", src)
		}
	}
}
