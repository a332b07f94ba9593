package config

import (
	"net"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseHealthEveryKey(t *testing.T) {
	cfg := mustParse(t, `
[defaults.probes.liveness]
tcp = 8080
period = "5s"

[program.db]
command = "db"
restart = "on-failure"
notify = "sd_notify"
watchdog = "30s"

[program.migrate]
command = "migrate"
restart = "never"
notify = "fd"

[program.cache]
command = "cache"
ready_log_line = '^ready to accept connections$'

[program.cache.probes.liveness]
http = "http://127.0.0.1:6379/health"

[program.web]
command = "web"
depends_on = { migrate = "completed", db = "ready", cache = "running" }

[program.web.probes.startup]
command = "check --startup"
failure_threshold = 30
period = "1s"
termination_grace_period = "3s"

[program.web.probes.readiness]
http = { url = "https://127.0.0.1:8443/ready", headers = { Host = "web.local", X-Probe = "1" }, expect_status = 204 }
initial_delay = "2s"
period = "3s"
timeout = "500ms"
success_threshold = 2
failure_threshold = 4

[program.plain]
command = "plain"
depends_on = ["db", "web"]
notify = "fd"
notify_fd = 5

[program.plain.probes.liveness]
tcp = "db.internal:5432"
`)
	db, migrate, cache, web, plain := cfg.Program("db"), cfg.Program("migrate"), cfg.Program("cache"), cfg.Program("web"), cfg.Program("plain")

	// [defaults.probes.liveness] applies where a program has no liveness
	// handler of its own, with the kubelet's defaults around it.
	wantDefault := &Probe{TCP: "127.0.0.1:8080", Period: 5 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	if !reflect.DeepEqual(db.Probes.Liveness, wantDefault) {
		t.Errorf("db liveness = %+v, want %+v", db.Probes.Liveness, wantDefault)
	}
	if db.Notify != NotifySdNotify || db.Watchdog != 30*time.Second || db.NotifyFD != 0 {
		t.Errorf("db notify = %q, watchdog %v, fd %d", db.Notify, db.Watchdog, db.NotifyFD)
	}
	if migrate.Notify != NotifyFD || migrate.NotifyFD != DefaultNotifyFD {
		t.Errorf("migrate notify = %q fd %d, want fd 3", migrate.Notify, migrate.NotifyFD)
	}
	// A program's http replaces the default tcp: one handler per probe.
	wantCache := &Probe{HTTP: &HTTPProbe{URL: "http://127.0.0.1:6379/health"}, Period: 5 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	if !reflect.DeepEqual(cache.Probes.Liveness, wantCache) {
		t.Errorf("cache liveness = %+v, want %+v", cache.Probes.Liveness, wantCache)
	}
	if cache.ReadyLogLine != "^ready to accept connections$" || !cache.HasReadinessCheck() {
		t.Errorf("cache ready_log_line = %q", cache.ReadyLogLine)
	}

	wantStartup := &Probe{Command: []string{"check", "--startup"}, Period: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 30,
		TerminationGracePeriod: 3 * time.Second}
	if !reflect.DeepEqual(web.Probes.Startup, wantStartup) {
		t.Errorf("web startup = %+v, want %+v", web.Probes.Startup, wantStartup)
	}
	wantReady := &Probe{
		HTTP:         &HTTPProbe{URL: "https://127.0.0.1:8443/ready", Headers: map[string]string{"Host": "web.local", "X-Probe": "1"}, ExpectStatus: 204},
		InitialDelay: 2 * time.Second, Period: 3 * time.Second, Timeout: 500 * time.Millisecond, SuccessThreshold: 2, FailureThreshold: 4,
	}
	if !reflect.DeepEqual(web.Probes.Readiness, wantReady) {
		t.Errorf("web readiness = %+v, want %+v", web.Probes.Readiness, wantReady)
	}
	if plain.Notify != NotifyFD || plain.NotifyFD != 5 {
		t.Errorf("plain notify = %q fd %d", plain.Notify, plain.NotifyFD)
	}
	// The table form keeps each condition; names are in line order, then
	// (one inline table) in name order.
	if want := []string{"cache", "db", "migrate"}; !reflect.DeepEqual(web.DependsOn, want) {
		t.Errorf("web depends_on = %v, want %v", web.DependsOn, want)
	}
	for dep, want := range map[string]string{"migrate": DependCompleted, "db": DependReady, "cache": DependRunning} {
		if got := web.DependsOnCondition(dep); got != want {
			t.Errorf("web waits for %s to be %q, want %q", dep, got, want)
		}
	}
	if plain.DependsOnCond != nil || plain.DependsOnCondition("db") != DependReady {
		t.Errorf("array form: DependsOnCond = %v, condition %q", plain.DependsOnCond, plain.DependsOnCondition("db"))
	}
	if plain.Probes.Liveness.TCP != "db.internal:5432" {
		t.Errorf("plain = %+v", plain.Probes)
	}
	if !db.HasReadinessCheck() || !migrate.HasReadinessCheck() || !web.HasReadinessCheck() || !plain.HasReadinessCheck() {
		t.Error("HasReadinessCheck false for a notify or probe program")
	}
	if noCheck := mustParse(t, "[program.x]\ncommand = \"x\"\nprobes.liveness.tcp = 1\n").Programs[0]; noCheck.HasReadinessCheck() {
		t.Error("HasReadinessCheck true with a liveness probe only")
	}
}

func TestParseHealthErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "probes",
			src: `[program.web]
command = "x"
[program.web.probes]
readyness = { tcp = 1 }
[program.web.probes.startup]
tcp = ":0"
success_threshold = 2
[program.web.probes.liveness]
command = "check"
http = "http://127.0.0.1/"
periode = "1s"
[program.web.probes.readiness]
period = "0s"
timeout = "soon"
failure_threshold = 0
initial_delay = 5
termination_grace_period = "5s"
`,
			want: []string{
				`test.toml:4: program.web.probes.readyness: unknown key (did you mean "readiness"?)`,
				`test.toml:6: program.web.probes.startup.tcp: port must be a number from 1 to 65535 (got "0")`,
				`test.toml:7: program.web.probes.startup.success_threshold: must be 1 for a startup probe (got 2): one success is enough`,
				`test.toml:10: program.web.probes.liveness.http: a probe is one of command, http and tcp; command and http are set`,
				`test.toml:11: program.web.probes.liveness.periode: unknown key (did you mean "period"?)`,
				`test.toml:12: program.web.probes.readiness: needs a command, an http URL or a tcp address`,
				`test.toml:13: program.web.probes.readiness.period: must be more than 0`,
				`test.toml:14: program.web.probes.readiness.timeout: "soon" is not a duration: want a Go duration like "10s", "1m30s" or "250ms"`,
				`test.toml:15: program.web.probes.readiness.failure_threshold: must be between 1 and 1048576 (got 0)`,
				`test.toml:16: program.web.probes.readiness.initial_delay: must be a duration string like "10s" (got integer 5)`,
				`test.toml:17: program.web.probes.readiness.termination_grace_period: only a startup or liveness probe stops the program; a readiness probe has no grace period`,
			},
		},
		{
			name: "probe handlers",
			src: `[program.a]
command = "x"
probes.liveness.http = "ftp://host/"
probes.readiness.tcp = "no-port"
probes.startup.http = { headers = { "Bad Header" = "1" }, expect_status = 700, method = "POST" }
[program.b]
command = "x"
probes.liveness.tcp = true
probes.readiness.http = 80
probes.startup.command = ""
`,
			want: []string{
				`test.toml:3: program.a.probes.liveness.http: "ftp://host/" is not an http:// or https:// URL`,
				`test.toml:4: program.a.probes.readiness.tcp: "no-port" is not host:port (like "127.0.0.1:5432" or ":5432")`,
				`test.toml:5: program.a.probes.startup.http: needs a url`,
				`test.toml:5: program.a.probes.startup.http.expect_status: must be between 100 and 599 (got 700)`,
				`test.toml:5: program.a.probes.startup.http.headers."Bad Header": invalid header`,
				`test.toml:5: program.a.probes.startup.http.method: unknown key (known: url, headers, expect_status)`,
				`test.toml:8: program.b.probes.liveness.tcp: must be "host:port" or a port number (got boolean true)`,
				`test.toml:9: program.b.probes.readiness.http: must be a URL or a table with url, headers, expect_status (got integer 80)`,
				`test.toml:10: program.b.probes.startup.command: must not be empty`,
			},
		},
		{
			name: "notify",
			src: `[program.a]
command = "x"
notify = "systemd"
notify_fd = 4
watchdog = "10s"
[program.b]
command = "x"
notify = "fd"
notify_fd = 2
watchdog = "0s"
[program.c]
command = "x"
ready_log_line = "ready("
[program.d]
command = "x"
ready_log_line = ""
[program.e]
command = "x"
notify = "sd_notify"
ready_log_line = "ready"
probes.readiness.tcp = 80
`,
			want: []string{
				`test.toml:3: program.a.notify: must be one of sd_notify, fd, none (got "systemd")`,
				`test.toml:4: program.a.notify_fd: applies only with notify = "fd"`,
				`test.toml:5: program.a.watchdog: needs notify = "sd_notify": the program pings with WATCHDOG=1`,
				`test.toml:9: program.b.notify_fd: must be between 3 and 1023 (got 2)`,
				`test.toml:10: program.b.watchdog: must be more than 0 (leave it out for no watchdog)`,
				"test.toml:13: program.c.ready_log_line: invalid regular expression: missing closing ): `ready(`",
				`test.toml:16: program.d.ready_log_line: must be a regular expression, not empty`,
				`test.toml:20: program.e.ready_log_line: readiness comes from one source; probes.readiness and notify and ready_log_line are set: keep one`,
			},
		},
		{
			name: "net namespace",
			src: `[program.a]
command = "x"
sandbox.namespaces = ["net"]
probes.liveness.tcp = 80
probes.readiness.http = "http://127.0.0.1/"
probes.startup.command = "true"
`,
			want: []string{
				`test.toml:4: program.a.probes.liveness: an http or tcp probe cannot reach a program in its own "net" namespace: use a command probe (run inside it), like ["curl", "-fsS", "http://127.0.0.1:8080/healthz"]`,
				`test.toml:5: program.a.probes.readiness: an http or tcp probe cannot reach a program in its own "net" namespace: use a command probe (run inside it), like ["curl", "-fsS", "http://127.0.0.1:8080/healthz"]`,
			},
		},
		{
			name: "depends_on table",
			src: `[program.db]
command = "x"
[program.setup]
command = "x"
[program.web]
command = "x"
depends_on = { db = "healthy", setup = "completed", cahe = "running" }
[program.a]
command = "x"
depends_on = 3
[program.b]
command = "x"
depends_on = { c = "running" }
[program.c]
command = "x"
restart = "never"
depends_on = { b = "ready" }
`,
			want: []string{
				`test.toml:7: program.web.depends_on.cahe: unknown program "cahe"`,
				`test.toml:7: program.web.depends_on.db: must be one of ready, running, completed (got "healthy")`,
				`test.toml:7: program.web.depends_on.setup: "setup" is restarted even after a successful exit (restart = "always"), so it never completes: give it restart = "on-failure" or "never", or wait for "ready"`,
				`test.toml:10: program.a.depends_on: must be an array of names like ["db"], or a table like { db = "ready", migrate = "completed" } (got integer 3)`,
				`test.toml:13: program.b.depends_on.c: dependency cycle: b -> c -> b`,
			},
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

// TestHealthNeedsNewProcess: probes and ready_log_line apply to the
// running process; notify, notify_fd and watchdog change what it was given.
func TestHealthNeedsNewProcess(t *testing.T) {
	base := "[program.db]\ncommand = \"db\"\nrestart = \"never\"\n[program.web]\ncommand = \"server\"\n"
	tests := []struct {
		name       string
		src        string
		equal      bool
		newProcess bool
	}{
		{"same", base, true, false},
		{"liveness probe", base + "probes.liveness.tcp = 80\n", false, false},
		{"readiness period", base + "probes.readiness = { tcp = 80, period = \"1s\" }\n", false, false},
		{"ready_log_line", base + "ready_log_line = \"up\"\n", false, false},
		{"depends_on table, default condition", base + "depends_on = { db = \"ready\" }\n", false, false},
		{"depends_on completed", base + "depends_on = { db = \"completed\" }\n", false, false},
		{"notify", base + "notify = \"sd_notify\"\n", false, true},
		{"notify fd", base + "notify = \"fd\"\n", false, true},
		{"watchdog", base + "notify = \"sd_notify\"\nwatchdog = \"5s\"\n", false, true},
	}
	old := mustParse(t, base).Program("web")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.src).Program("web")
			if got := old.Equal(p); got != tt.equal {
				t.Errorf("Equal = %v, want %v", got, tt.equal)
			}
			if got := old.NeedsNewProcess(p); got != tt.newProcess {
				t.Errorf("NeedsNewProcess = %v, want %v", got, tt.newProcess)
			}
		})
	}
	// The array form and a table saying the default ask for the same.
	arr := mustParse(t, base+"depends_on = [\"db\"]\n").Program("web")
	tbl := mustParse(t, base+"depends_on = { db = \"ready\" }\n").Program("web")
	if !arr.Equal(tbl) {
		t.Error(`depends_on = ["db"] and { db = "ready" } differ`)
	}
	sd := mustParse(t, base+"notify = \"sd_notify\"\nwatchdog = \"5s\"\n").Program("web")
	sd2 := mustParse(t, base+"notify = \"sd_notify\"\nwatchdog = \"6s\"\n").Program("web")
	if !sd.NeedsNewProcess(sd2) {
		t.Error("a new watchdog timeout (WATCHDOG_USEC) does not need a new process")
	}
}

// FuzzParseHealth: an accepted file's health settings are valid
// throughout (what the supervisor hands to probe and notify without
// checking again); refusals are FuzzParse's business.
func FuzzParseHealth(f *testing.F) {
	f.Add(`[program.db]
command = "db"
restart = "never"
notify = "sd_notify"
watchdog = "1s"
[program.web]
command = "web"
depends_on = { db = "completed" }
probes.startup = { command = "x", failure_threshold = 30 }
probes.readiness = { http = { url = "http://127.0.0.1/", headers = { A = "b" } }, success_threshold = 2 }
probes.liveness.tcp = ":80"
`)
	f.Add("[defaults.probes.liveness]\ntcp = 1\n[program.a]\ncommand = \"a\"\nnotify = \"fd\"\nnotify_fd = 9\nprobes.liveness.http = \"https://x/\"\n")
	f.Add("[program.a]\ncommand = \"a\"\nready_log_line = '^up (\\d+)$'\ndepends_on = { b = \"running\" }\n[program.b]\ncommand = \"b\"\n")
	f.Fuzz(func(t *testing.T, src string) {
		cfg, err := parse("fuzz.toml", []byte(src), env())
		if err != nil {
			return
		}
		for _, p := range cfg.Programs {
			for kind, pr := range map[string]*Probe{"startup": p.Probes.Startup, "readiness": p.Probes.Readiness, "liveness": p.Probes.Liveness} {
				if pr == nil {
					continue
				}
				n := 0
				if len(pr.Command) > 0 {
					n++
				}
				if pr.HTTP != nil {
					n++
					if _, err := url.Parse(pr.HTTP.URL); err != nil {
						t.Fatalf("%s probe: bad URL %q", kind, pr.HTTP.URL)
					}
				}
				if pr.TCP != "" {
					n++
					if _, _, err := net.SplitHostPort(pr.TCP); err != nil {
						t.Fatalf("%s probe: bad tcp %q", kind, pr.TCP)
					}
				}
				if n != 1 || pr.Period <= 0 || pr.Timeout <= 0 || pr.InitialDelay < 0 || pr.SuccessThreshold < 1 ||
					pr.FailureThreshold < 1 || (kind != "readiness" && pr.SuccessThreshold != 1) {
					t.Fatalf("bad %s probe %+v", kind, pr)
				}
			}
			switch {
			case p.Notify != NotifyNone && p.Notify != NotifySdNotify && p.Notify != NotifyFD,
				(p.Notify == NotifyFD) != (p.NotifyFD >= 3),
				p.Watchdog < 0 || (p.Watchdog > 0 && p.Notify != NotifySdNotify):
				t.Fatalf("bad notify %q fd %d watchdog %v", p.Notify, p.NotifyFD, p.Watchdog)
			}
			if _, err := regexp.Compile(p.ReadyLogLine); err != nil {
				t.Fatalf("bad ready_log_line %q", p.ReadyLogLine)
			}
			sources := 0
			for _, set := range []bool{p.Probes.Readiness != nil, p.Notify != NotifyNone, p.ReadyLogLine != ""} {
				if set {
					sources++
				}
			}
			if sources > 1 {
				t.Fatalf("%s has %d readiness sources", p.Name, sources)
			}
			for dep, c := range p.DependsOnCond {
				if !slices.Contains(p.DependsOn, dep) {
					t.Fatalf("condition for %q, which is not in depends_on", dep)
				}
				if c != DependReady && c != DependRunning && c != DependCompleted {
					t.Fatalf("bad condition %q", c)
				}
				if c == DependCompleted && cfg.Program(dep).Restart == RestartAlways {
					t.Fatalf("%q waits for %q to complete, which restarts always", p.Name, dep)
				}
			}
		}
	})
}
