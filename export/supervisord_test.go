package export

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
)

func TestImportSupervisord(t *testing.T) {
	src, err := os.ReadFile("testdata/supervisord.conf")
	if err != nil {
		t.Fatal(err)
	}
	out, warns, err := ImportSupervisord("supervisord.conf", src)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", "/home/test")
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "supervise.toml"), out)
	if err != nil {
		t.Fatalf("the import does not load: %v\n%s", err, out)
	}
	web, worker, cron := cfg.Program("web"), cfg.Program("worker"), cfg.Program("cron-job")
	if web == nil || worker == nil || cron == nil {
		t.Fatalf("programs: %v\n%s", cfg.Programs, out)
	}
	if strings.Join(web.Command, " ") != "/bin/sh -c exec /usr/bin/python3 -m http.server ${WEB_PORT}" || web.Dir != "/srv/www" || web.User != "www-data" ||
		web.Instances != 2 || web.Restart != config.RestartAlways || len(web.SuccessExitCodes) != 2 || web.SuccessExitCodes[1] != 2 ||
		web.StopSignal != syscall.SIGQUIT || web.StopTimeout != 20*time.Second ||
		web.Env["APP_ENV"] != "production" || web.Env["GREETING"] != "hello, world" || web.Env["HOME_DIR"] != "/home/test/web" ||
		web.Stdout.File != "/var/log/web.out.log" || web.Stderr.File != "/var/log/web.out.log" || web.Stdout.MaxSize != 50<<20 || web.Stdout.MaxFiles != 10 {
		t.Errorf("web: %+v\n%s", web, out)
	}
	if worker.Restart != config.RestartOnFailure || worker.Sandbox.Umask != 0o22 || worker.Stdout.File != "" || worker.Stderr.File != "" {
		t.Errorf("worker: %+v", worker)
	}
	if cron.Autostart || cron.Restart != config.RestartNever {
		t.Errorf("cron job: %+v", cron)
	}
	got := map[string]bool{}
	for _, w := range warns {
		got[w.Program+" "+w.Key] = true
	}
	for _, want := range []string{
		"web process_name", "web startsecs", "web startretries", "web stopasgroup", "web priority",
		"worker stdout_logfile", "cron job name", " [group:site]", " [include]",
	} {
		if !got[want] {
			t.Errorf("no warning %q; got %v", want, warns)
		}
	}
	for _, quiet := range []string{" [supervisord]", " [unix_http_server]", " [supervisorctl]", " [rpcinterface:supervisor]", "web environment"} {
		if got[quiet] {
			t.Errorf("a warning on %q, which maps or is supervisord's own", quiet)
		}
	}
}

func TestImportSupervisordErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"no program", "[supervisord]\nlogfile=x\n", "no [program:x] section"},
		{"no command", "[program:a]\nuser=x\n", "no command"},
		{"key outside", "command=x\n", "outside any section"},
		{"unclosed header", "[program:a\ncommand=x\n", "unclosed section header"},
		{"bad line", "[program:a]\ncommand\n", "want key = value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ImportSupervisord("s.conf", []byte(tc.src)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
	if _, ws, err := ImportSupervisord("s.conf", []byte("[program:a]\ncommand=x\nenvironment=A=\"open\n")); err != nil || len(ws) == 0 || ws[0].Key != "environment" {
		t.Errorf("a broken environment: %v %v", ws, err)
	}
}

// A Procfile and its .env become programs that load back with the same
// commands and environment ($ in a .env value stays literal).
func TestImportProcfile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".env"), []byte("NAME=dev\nPRICE='$5'\n"), 0o644)
	pf := filepath.Join(dir, "Procfile")
	os.WriteFile(pf, []byte("web: bundle exec puma -p $PORT\nworker: echo \"$NAME\"\n"), 0o644)
	src, err := config.Load(pf)
	if err != nil {
		t.Fatal(err)
	}
	out, warns := ImportProcfile(src)
	cfg, err := config.Parse(filepath.Join(dir, "supervise.toml"), out)
	if err != nil {
		t.Fatalf("the import does not load: %v\n%s", err, out)
	}
	for _, name := range []string{"web", "worker"} {
		a, b := src.Program(name), cfg.Program(name)
		if b == nil || strings.Join(a.Command, " ") != strings.Join(b.Command, " ") || b.Restart != config.RestartAlways ||
			b.Env["PORT"] != a.Env["PORT"] || b.Env["PRICE"] != "$5" || b.Env["NAME"] != "dev" {
			t.Errorf("%s: %+v from\n%s", name, b, out)
		}
	}
	if len(warns) == 0 || warns[len(warns)-1].Key != "Procfile" {
		t.Errorf("warnings %v", warns)
	}
}
