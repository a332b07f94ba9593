package export

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/supervise-dev/supervise/config"
)

func parse(t *testing.T, src string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "supervise.toml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func unit(t *testing.T, files []File, name string) string {
	t.Helper()
	for _, f := range files {
		if f.Name == name {
			return string(f.Data)
		}
	}
	t.Fatalf("no %s among %d files", name, len(files))
	return ""
}

// verify runs systemd-analyze verify on the units, which must pass without
// a word.
func verify(t *testing.T, files []File) {
	t.Helper()
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is missing (Debian's systemd package)")
	}
	dir := t.TempDir()
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command(bin, append([]string{"verify"}, paths...)...).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

func TestSystemdExampleConfigVerifies(t *testing.T) {
	cfg, err := config.Load("../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	files, warns, err := Systemd(cfg, SystemdOptions{Prefix: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	verify(t, files)
	if len(files) != len(cfg.Programs)+2 {
		t.Errorf("%d files for %d programs, a timer and a target", len(files), len(cfg.Programs))
	}
	target := unit(t, files, "demo.target")
	if !strings.Contains(target, "demo-worker@0.service demo-worker@1.service") || strings.Contains(target, "demo-manual") ||
		!strings.Contains(target, "demo-report.timer") || strings.Contains(target, "demo-report.service") {
		t.Errorf("target:\n%s", target)
	}
	for _, w := range warns {
		if w.Key == "" || w.Why == "" {
			t.Errorf("empty warning %+v", w)
		}
	}
}

// Every key that maps, with the lines it must give.
func TestSystemdMapping(t *testing.T) {
	cfg := parse(t, `
[program.db]
command = "sleep 1000"
notify = "sd_notify"
watchdog = "30s"

[program.web]
command = ["sh", "-c", "echo \"100% $HOME\"; exec sleep 1000"]
dir = "/tmp"
env = { A = "x y", B = "50%" }
user = "daemon"
group = "daemon"
groups = ["adm"]
restart = "on-failure"
success_exit_codes = [0, 3]
restart_rules = [{ exit_codes = { operator = "In", values = [75] } }]
stop_signal = "QUIT"
stop_timeout = "7s"
backoff = { initial = "2s", max = "1m" }
depends_on = { db = { condition = "running", restart_with = true } }
stdout = { file = "/tmp/web.log" }
[program.web.sandbox]
memory_max = "64MiB"
cpu_max = 0.5
pids_max = 32
namespaces = ["net", "ipc", "uts", "user"]
no_new_privileges = true
umask = "0027"
rlimits = { nofile = { soft = 1024, hard = 4096 }, core = "unlimited" }
[program.web.hooks]
pre_start = { command = "true" }
post_start = { command = "true" }
pre_stop = { command = "true" }
post_stop = { command = "true" }

[program.pool]
command = "sleep 1000"
instances = 2
depends_on = ["db"]
`)
	// This machine's systemd (252) verifies what it knows; the 254 keys
	// are checked as text.
	old, _, err := Systemd(cfg, SystemdOptions{Prefix: "app"})
	if err != nil {
		t.Fatal(err)
	}
	verify(t, old)
	files, _, err := Systemd(cfg, SystemdOptions{Prefix: "app", Version: 254})
	if err != nil {
		t.Fatal(err)
	}
	web := unit(t, files, "app-web.service")
	for _, want := range []string{
		`ExecStart=/usr/bin/sh -c "echo \"100%% $$HOME\"; exec sleep 1000"`,
		"WorkingDirectory=/tmp", `Environment="A=x y"`, `Environment="B=50%%"`, `Environment="SUPERVISE_PROGRAM=web"`,
		"User=daemon", "Group=daemon", "SupplementaryGroups=adm",
		"Restart=on-failure", "SuccessExitStatus=3", "RestartForceExitStatus=75",
		"RestartSec=2s", "RestartSteps=5", "RestartMaxDelaySec=60s",
		"KillSignal=SIGQUIT", "TimeoutStopSec=7s",
		"After=app-db.service", "BindsTo=app-db.service",
		"ExecStartPre=/usr/bin/true", "ExecStartPost=/usr/bin/true", "ExecStopPost=-/usr/bin/true",
		`ExecStop=/bin/sh -c "[ -z \"$${EXIT_CODE-}\" ] || exit 0; exec \"$$@\"" sh /usr/bin/true`,
		"MemoryMax=67108864", "CPUQuota=50%", "TasksMax=32",
		"PrivateNetwork=yes", "PrivateIPC=yes", "ProtectHostname=yes", "PrivateUsers=yes",
		"NoNewPrivileges=yes", "UMask=0027", "LimitCORE=infinity:infinity", "LimitNOFILE=1024:4096",
		"StandardOutput=append:/tmp/web.log",
	} {
		if !strings.Contains(web, want+"\n") {
			t.Errorf("web lacks %q:\n%s", want, web)
		}
	}
	if db := unit(t, files, "app-db.service"); !strings.Contains(db, "Type=notify\n") || !strings.Contains(db, "WatchdogSec=30s\n") {
		t.Errorf("db:\n%s", db)
	}
	pool := unit(t, files, "app-pool@.service")
	if !strings.Contains(pool, "Wants=app-db.service\n") || !strings.Contains(pool, "Environment=SUPERVISE_INSTANCE=%i\n") {
		t.Errorf("pool:\n%s", pool)
	}
	if !strings.Contains(unit(t, files, "app.target"), "Wants=app-db.service app-web.service app-pool@0.service app-pool@1.service\n") {
		t.Errorf("target:\n%s", unit(t, files, "app.target"))
	}
}

// Every warning path: a config that needs it, and the key it names.
func TestSystemdWarnings(t *testing.T) {
	base := "[program.p]\ncommand = \"sleep 1\"\n"
	for _, tc := range []struct {
		name, src, key string
	}{
		{"exit_on", "[supervisor]\nexit_on = [\"p\"]\n" + base, "supervisor.exit_on"},
		{"http", "[supervisor]\nhttp = \"127.0.0.1:9100\"\n" + base, "supervisor.http"},
		{"notify fd", base + "notify = \"fd\"\n", "notify"},
		{"ready_log_line", base + "ready_log_line = \"up\"\n", "ready_log_line"},
		{"command not found", "[program.p]\ncommand = \"no-such-program-anywhere\"\n", "command"},
		{"env_file", base + "env_file = \"e.env\"\n", "env_file"},
		{"PORT of instances", "", "PORT"},
		{"NotIn rule", base + "restart_rules = [{ exit_codes = { operator = \"NotIn\", values = [0] } }]\n", "restart_rules[0]"},
		{"backoff before 254", base + "backoff = { initial = \"1s\", max = \"1m\" }\n", "backoff"},
		{"reset_after", base + "backoff = { reset_after = \"1h\" }\n", "backoff.reset_after"},
		{"min_stop_grace", base + "min_stop_grace = \"5s\"\n", "min_stop_grace"},
		{"http hook", base + "hooks.pre_stop = { http = \"http://127.0.0.1:1/drain\" }\n", "hooks.pre_stop"},
		{"hook timeout", base + "hooks.post_start = { command = \"true\", timeout = \"5s\" }\n", "hooks.post_start.timeout"},
		{"mount namespace", base + "sandbox = { namespaces = [\"mount\"] }\n", "sandbox.namespaces"},
		{"pid namespace", base + "sandbox = { namespaces = [\"pid\"] }\n", "sandbox.namespaces"},
		{"hostname", base + "sandbox = { namespaces = [\"uts\"], hostname = \"h\" }\n", "sandbox.hostname"},
		{"log file", base + "stdout = { file = \"/tmp/p.log\" }\n", "stdout.max_size"},
		{"probes", base + "probes.liveness = { tcp = 1 }\n", "probes"},
		{"watch", base + "watch = { paths = [\".\"] }\n", "watch"},
		{"critical", base + "critical = true\n", "critical"},
		{"sidecar", base + "sidecar = true\n", "sidecar"},
		{"autostart", base + "autostart = false\n", "autostart"},
		{"ready dependency", base + "[program.q]\ncommand = \"sleep 1\"\ndepends_on = [\"r\"]\n[program.r]\ncommand = \"sleep 1\"\nready_log_line = \"x\"\n", "depends_on.r"},
		{"completed dependency", base + "[program.q]\ncommand = \"sleep 1\"\ndepends_on = { r = \"completed\" }\n[program.r]\ncommand = \"sleep 1\"\nrestart = \"never\"\n", "depends_on.r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "e.env"), []byte("X=1\n"), 0o644)
			var cfg *config.Config
			if tc.key == "PORT" {
				// Only a Procfile's programs have a PORT.
				c, err := config.ParseProcfile(filepath.Join(dir, "Procfile"), []byte("web: sleep 1\n"), config.ProcfileOptions{Formation: map[string]int{"web": 2}})
				if err != nil {
					t.Fatal(err)
				}
				cfg = c
			} else {
				c, err := config.Parse(filepath.Join(dir, "supervise.toml"), []byte(tc.src))
				if err != nil {
					t.Fatal(err)
				}
				cfg = c
			}
			_, warns, err := Systemd(cfg, SystemdOptions{Prefix: "app"})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range warns {
				if w.Key == tc.key {
					return
				}
			}
			t.Errorf("no warning on %s; got %v", tc.key, warns)
		})
	}
}

// A box as people write it: a server restarted only on failure, a
// one-shot it waits for, a sidecar, hooks and probes. The units verify
// without a word, keep restarting as supervise's backoff does (no start
// limit), run pre_stop only for a stop that was asked for, and warn that
// the exit variables of hooks have other names under systemd.
func TestSystemdFidelity(t *testing.T) {
	cfg := parse(t, `
[program.api]
command = ["sleep", "1000"]
restart = "on-failure"
backoff = { initial = "1s", max = "1m" }
depends_on = { migrate = "completed", proxy = "running" }
[program.api.probes.liveness]
tcp = 8080
[program.api.hooks.pre_stop]
command = ["sleep", "2"]
[program.api.hooks.post_stop]
command = ["sh", "-c", "echo exit $SUPERVISE_EXIT_CODE"]

[program.migrate]
command = ["true"]
restart = "never"

[program.proxy]
command = ["sleep", "1000"]
sidecar = true
[program.proxy.hooks.pre_stop]
sleep = "1.5s"
`)
	files, warns, err := Systemd(cfg, SystemdOptions{Prefix: "box"})
	if err != nil {
		t.Fatal(err)
	}
	verify(t, files)
	for _, name := range []string{"box-api.service", "box-proxy.service"} {
		u := unit(t, files, name)
		unitSection, _, _ := strings.Cut(u, "[Service]")
		if !strings.Contains(unitSection, "\nStartLimitIntervalSec=0\n") {
			t.Errorf("%s: no StartLimitIntervalSec=0 in [Unit]: systemd gives up after 5 starts in 10s, supervise keeps backing off\n%s", name, u)
		}
	}
	if u := unit(t, files, "box-proxy.service"); !strings.Contains(u, " sh /usr/bin/sleep 1.5\n") {
		t.Errorf("proxy: pre_stop sleep 1.5s is not sleep(1) behind the guard:\n%s", u)
	}
	api := unit(t, files, "box-api.service")
	var stop string
	for _, l := range strings.Split(api, "\n") {
		if strings.HasPrefix(l, "ExecStop=") {
			stop = l
		}
	}
	if !strings.Contains(stop, "EXIT_CODE") || !strings.HasSuffix(stop, "/usr/bin/sleep 2") {
		t.Errorf("ExecStop= runs pre_stop after a crash too (systemd runs it whenever the service stops): %q", stop)
	}
	// What systemd runs for ExecStop=, run for real with the environment
	// systemd gives it: pre_stop (here its argv with echo before it) runs
	// for a stop of a running service, not after an exit.
	got := dumpCommands(t, dumpUnit(t, systemdDump(t, files, "box.target"), "box-api.service"), "ExecStop")
	if len(got) != 1 {
		t.Fatalf("ExecStop= command lines: %q", got)
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "/usr/bin/sleep 2\n"},
		{[]string{"SERVICE_RESULT=exit-code", "EXIT_CODE=exited", "EXIT_STATUS=1"}, ""},
		{[]string{"SERVICE_RESULT=signal", "EXIT_CODE=killed", "EXIT_STATUS=KILL"}, ""},
	} {
		argv := slices.Clone(got[0])
		argv = slices.Insert(argv, len(argv)-2, "/bin/echo")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, tc.env...)
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != tc.want {
			t.Errorf("ExecStop= with %q: %v, output %q, want %q", tc.env, err, out, tc.want)
		}
	}
	keys := map[string]bool{}
	for _, w := range warns {
		keys[w.Program+" "+w.Key] = true
	}
	if !keys["api hooks.post_stop"] {
		t.Errorf("no warning that SUPERVISE_EXIT_* are $EXIT_CODE/$EXIT_STATUS under systemd: %v", warns)
	}
}

// systemd's StandardError= defaults to inherit: the descriptor of
// standard output, a StandardOutput= file included. A program whose
// stderr stays apart gets the journal for it (its console), one with
// stderr = "stdout" gets inherit, which is the same merge.
func TestSystemdStderr(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"stdout to a file, stderr apart", "stdout = { file = \"/tmp/p.log\" }\n",
			[]string{"StandardOutput=append:/tmp/p.log", "StandardError=journal"}},
		{"stdout to a file, stderr into it", "stdout = { file = \"/tmp/p.log\" }\nstderr = \"stdout\"\n",
			[]string{"StandardOutput=append:/tmp/p.log", "StandardError=inherit"}},
		{"both to the journal, merged", "stderr = \"stdout\"\n", []string{"StandardError=inherit"}},
		{"each to a file", "stdout = { file = \"/tmp/p.log\" }\nstderr = { file = \"/tmp/p.err\" }\n",
			[]string{"StandardOutput=append:/tmp/p.log", "StandardError=append:/tmp/p.err"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			files, _, err := Systemd(parse(t, "[program.p]\ncommand = \"sleep 1\"\n"+c.src), SystemdOptions{Prefix: "app"})
			if err != nil {
				t.Fatal(err)
			}
			verify(t, files)
			u := unit(t, files, "app-p.service")
			for _, w := range c.want {
				if !strings.Contains(u, w+"\n") {
					t.Errorf("the unit lacks %q:\n%s", w, u)
				}
			}
			if n := strings.Count(u, "StandardError="); n != 1 {
				t.Errorf("%d StandardError= lines:\n%s", n, u)
			}
		})
	}
}
