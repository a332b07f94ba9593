package export

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
)

// Every supervisord key the importer knows: what it maps to, or the
// warning it gives. Each row's program is "a" unless the row says.
func TestImportSupervisordKeys(t *testing.T) {
	here, _ := filepath.Abs(".")
	type row struct {
		name, src string
		check     func(*config.Config) bool
		warn      string // a warning's key that must be there ("" none for program a)
	}
	a := func(c *config.Config) *config.Program { return c.Program("a") }
	prog := func(rest string) string { return "[program:a]\ncommand=/bin/sleep 5\n" + rest }
	rows := []row{
		{"autorestart=true", prog("autorestart=true\n"), func(c *config.Config) bool { return a(c).Restart == config.RestartAlways }, ""},
		{"autorestart=yes", prog("autorestart=yes\n"), func(c *config.Config) bool { return a(c).Restart == config.RestartAlways }, ""},
		{"autorestart=on", prog("autorestart=On\n"), func(c *config.Config) bool { return a(c).Restart == config.RestartAlways }, ""},
		{"autorestart=1", prog("autorestart=1\n"), func(c *config.Config) bool { return a(c).Restart == config.RestartAlways }, ""},
		{"autorestart=false", prog("autorestart=false\n"), func(c *config.Config) bool { return a(c).Restart == config.RestartNever }, ""},
		{"autorestart=off", prog("autorestart=off\n"), func(c *config.Config) bool { return a(c).Restart == config.RestartNever }, ""},
		{"autorestart=no", prog("autorestart=no\n"), func(c *config.Config) bool { return a(c).Restart == config.RestartNever }, ""},
		{"autorestart=0", prog("autorestart=0\n"), func(c *config.Config) bool { return a(c).Restart == config.RestartNever }, ""},
		{"autorestart=unexpected, exitcodes", prog("autorestart=unexpected\nexitcodes=0, 2\n"), func(c *config.Config) bool {
			return a(c).Restart == config.RestartOnFailure && slices.Equal(a(c).SuccessExitCodes, []int{0, 2})
		}, ""},
		{"autorestart unset", prog(""), func(c *config.Config) bool { return a(c).Restart == config.RestartOnFailure }, ""},
		{"autostart=false", prog("autostart=false\n"), func(c *config.Config) bool { return !a(c).Autostart }, ""},
		{"inline comments", "[program:a]\ncommand=/bin/sleep 5 ; five seconds\ndirectory=/tmp # the scratch dir\nstdout_logfile=/var/log/a;b.log\n",
			func(c *config.Config) bool {
				return slices.Equal(a(c).Command, []string{"/bin/sleep", "5"}) && a(c).Dir == "/tmp" && a(c).Stdout.File == "/var/log/a;b.log"
			}, ""},
		{"[supervisord] environment", "[supervisord]\nenvironment=GLOBAL=\"g\",SHARED=\"from supervisord\"\n" +
			prog("environment=SHARED=\"from the program\",OWN=1\n"), func(c *config.Config) bool {
			e := a(c).Env
			return e["GLOBAL"] == "g" && e["SHARED"] == "from the program" && e["OWN"] == "1"
		}, ""},
		{"${VAR} stays literal", prog("environment=X=\"${HOME}\",Y='$$'\n"), func(c *config.Config) bool {
			return a(c).Env["X"] == "${HOME}" && a(c).Env["Y"] == "$$"
		}, ""},
		{"logfile: supervisord's rotation defaults", prog("stdout_logfile=/var/log/a.log\n"), func(c *config.Config) bool {
			o := a(c).Stdout
			return o.File == "/var/log/a.log" && o.MaxSize == 50<<20 && o.MaxFiles == 11
		}, ""},
		{"logfile: maxbytes and backups", prog("stdout_logfile=/var/log/a.log\nstdout_logfile_maxbytes=1KB\nstdout_logfile_backups=0\n"), func(c *config.Config) bool {
			o := a(c).Stdout
			return o.MaxSize == 4096 && o.MaxFiles == 1
		}, "stdout_logfile_maxbytes"},
		{"logfile: maxbytes=0 never rotates", prog("stderr_logfile=/var/log/a.err\nstderr_logfile_maxbytes=0\n"), func(c *config.Config) bool {
			return a(c).Stderr.File == "/var/log/a.err" && a(c).Stderr.MaxSize == 0
		}, ""},
		{"logfile: /dev/fd/1 and /proc/self/fd/2", prog("stdout_logfile=/dev/fd/1\nstderr_logfile=/proc/self/fd/2\n"), func(c *config.Config) bool {
			return a(c).Stdout.File == "" && a(c).Stdout.Console && a(c).Stderr.File == "" && a(c).Stderr.Console
		}, ""},
		{"redirect_stderr", prog("stdout_logfile=/var/log/a.log\nredirect_stderr=true\n"), func(c *config.Config) bool {
			return a(c).StderrToStdout && a(c).Stdout.File == "/var/log/a.log"
		}, ""},
		{"redirect_stderr to the console", prog("redirect_stderr=true\n"), func(c *config.Config) bool {
			return a(c).StderrToStdout && a(c).Stdout.Console && a(c).Stdout.File == ""
		}, ""},
		{"redirect_stderr=false", prog("stdout_logfile=/var/log/a.log\nredirect_stderr=false\n"), func(c *config.Config) bool {
			return !a(c).StderrToStdout && a(c).Stderr.Console && a(c).Stderr.File == ""
		}, ""},
		// supervisord: "Put process stderr output in this file unless
		// redirect_stderr is true."
		{"redirect_stderr over stderr_logfile", prog("stdout_logfile=/var/log/a.log\nstderr_logfile=/var/log/a.err\nstderr_logfile_backups=3\nredirect_stderr=true\n"), func(c *config.Config) bool {
			return a(c).StderrToStdout && a(c).Stdout.File == "/var/log/a.log"
		}, "stderr_logfile"},
		{"%(here)s and %(program_name)s", "[program:a]\ncommand=/bin/echo %(program_name)s\ndirectory=%(here)s\n", func(c *config.Config) bool {
			return a(c).Dir == here && slices.Equal(a(c).Command, []string{"/bin/echo", "a"})
		}, ""},
		{"numprocs without process_num", prog("numprocs=3\nprocess_name=%(program_name)s_%(process_num)s\n"), func(c *config.Config) bool {
			return a(c).Instances == 3 && a(c).Command[0] == "/bin/sleep"
		}, "process_name"},
		{"user", prog("user=nobody\n"), func(c *config.Config) bool { return a(c).User == "nobody" }, ""},
		{"directory", prog("directory=/tmp\n"), func(c *config.Config) bool { return a(c).Dir == "/tmp" }, ""},
		{"umask", prog("umask=077\n"), func(c *config.Config) bool { return a(c).Sandbox.Umask == 0o77 }, ""},
		{"stopsignal", prog("stopsignal=INT\n"), func(c *config.Config) bool { return a(c).StopSignal == syscall.SIGINT }, ""},
		{"stopwaitsecs", prog("stopwaitsecs=7\n"), func(c *config.Config) bool { return a(c).StopTimeout == 7*time.Second }, ""},
		{"stopasgroup/killasgroup=true: what supervise does", prog("stopasgroup=true\nkillasgroup=true\n"), func(*config.Config) bool { return true }, ""},
		{"stopasgroup=false", prog("stopasgroup=false\n"), func(*config.Config) bool { return true }, "stopasgroup"},
		{"killasgroup=false", prog("killasgroup=false\n"), func(*config.Config) bool { return true }, "killasgroup"},
		{"startsecs", prog("startsecs=10\n"), func(*config.Config) bool { return true }, "startsecs"},
		{"startretries", prog("startretries=3\n"), func(*config.Config) bool { return true }, "startretries"},
		{"priority orders the start", "[program:a]\ncommand=/bin/sleep 5\npriority=20\nautorestart=true\n" +
			"[program:b]\ncommand=/bin/sleep 5\npriority=10\nautorestart=true\n[program:c]\ncommand=/bin/sleep 5\nautorestart=true\n" +
			"[program:d]\ncommand=/bin/sleep 5\npriority=20\nautorestart=true\n",
			func(c *config.Config) bool {
				return slices.Equal(a(c).DependsOn, []string{"b"}) && len(c.Program("b").DependsOn) == 0 &&
					slices.Equal(c.Program("c").DependsOn, []string{"a", "d"}) && a(c).DependsOnCond["b"] == config.DependRunning
			}, "priority"},
		{"[group:x]", prog("[group:g]\nprograms=a\n"), func(*config.Config) bool { return true }, "[group:g]"},
		{"[eventlistener:x]", prog("[eventlistener:e]\ncommand=x\nevents=PROCESS_STATE\n"), func(*config.Config) bool { return true }, "[eventlistener:e]"},
		{"[program-default]", "[program-default]\nautorestart=true\n" + prog(""), func(*config.Config) bool { return true }, "[program-default]"},
		{"[include] without a file to read from", prog("[include]\nfiles=conf.d/*.conf\n"), func(*config.Config) bool { return true }, "[include]"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			out, warns, err := ImportSupervisord("s.conf", []byte(r.src))
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			cfg, err := config.Parse(filepath.Join(t.TempDir(), "supervise.toml"), out)
			if err != nil {
				t.Fatalf("the import does not load: %v\n%s", err, out)
			}
			if !r.check(cfg) {
				t.Errorf("mapped wrong:\n%s", out)
			}
			var got []string
			for _, w := range warns {
				if w.Program == "a" || w.Program == "" {
					got = append(got, w.Key)
				}
			}
			switch {
			case r.warn == "" && len(got) > 0:
				t.Errorf("warnings %q, want none", got)
			case r.warn != "" && !slices.Contains(got, r.warn):
				t.Errorf("warnings %q, want one on %q", got, r.warn)
			}
		})
	}
}

// What supervisord refuses is refused, not mapped to a guess.
func TestImportSupervisordKeyErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"autorestart=sometimes\n", `autorestart: "sometimes" is not true, false or unexpected`},
		{"exitcodes=0,x\n", `exitcodes: "x" is not an exit status`},
		{"stdout_logfile=/var/log/a\nstdout_logfile_maxbytes=lots\n", `stdout_logfile_maxbytes: "lots" is not a size`},
		{"stdout_logfile=/var/log/a\nstdout_logfile_backups=-1\n", `stdout_logfile_backups: "-1" is not a count`},
	} {
		if _, _, err := ImportSupervisord("s.conf", []byte("[program:a]\ncommand=/bin/true\n"+tc.src)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.src, err, tc.want)
		}
	}
}

// %(process_num)s stands for each instance's own number: the command runs
// through sh, which reads it from $SUPERVISE_INSTANCE plus numprocs_start;
// every word of the line stays a quoted literal to that shell.
func TestImportSupervisordProcessNum(t *testing.T) {
	cfg, warns, out := importLoad(t, "[program:q]\n"+
		"command=/bin/echo worker-%(process_num)02d 'it''s $(id) `x`' \"a\\\"b\" %%(process_num)d\n"+
		"numprocs=3\nnumprocs_start=5\n"+
		"environment=WORKER=\"w%(process_num)d\",PLAIN=\"$x\"\n"+
		"stdout_logfile=/var/log/q-%(process_num)02d.log\n"+
		"[program:e]\ncommand=/usr/bin/env\nnumprocs=2\nnumprocs_start=5\n"+
		"environment=WORKER=\"w%(process_num)d\",PLAIN=\"$x\"\n")
	run := func(p *config.Program) string {
		t.Helper()
		if p.Instances < 2 || p.Command[0] != "/bin/sh" {
			t.Fatalf("%s: %+v\n%s", p.Name, p, out)
		}
		cmd := exec.Command(p.Command[0], p.Command[1:]...)
		cmd.Env = []string{"SUPERVISE_INSTANCE=1", "PATH=" + os.Getenv("PATH")}
		for k, v := range p.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", p.Command, err)
		}
		return string(b)
	}
	q := cfg.Program("q")
	if got, want := run(q), "worker-06 its $(id) `x` a\"b %(process_num)d\n"; got != want {
		t.Errorf("instance 1 printed %q, want %q\n%s", got, want, out)
	}
	if got := run(cfg.Program("e")); !strings.Contains(got, "\nWORKER=w6\n") || !strings.Contains(got, "\nPLAIN=$x\n") {
		t.Errorf("instance 1's environment:\n%s", got)
	}
	if q.Stdout.File != "/var/log/q-.log" {
		t.Errorf("the instances' shared log %q", q.Stdout.File)
	}
	keys := map[string]bool{}
	for _, w := range warns {
		keys[w.Key] = true
	}
	if !keys["command"] || !keys["stdout_logfile"] {
		t.Errorf("warnings %v, want on command and stdout_logfile", warns)
	}
}

// [include] files= is read as supervisord reads it: globs relative to the
// including file, sorted, each file's sections merged into the first's.
func TestImportSupervisordInclude(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, "conf.d"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "supervisord.conf"), []byte("[program:main]\ncommand=/bin/true\n[include]\nfiles = conf.d/*.conf extra.ini\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "conf.d", "b.conf"), []byte("[program:b]\ncommand=/bin/b\n[program:main]\nautostart=false\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "conf.d", "a.conf"), []byte("[program:a]\ncommand=/bin/a\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "extra.ini"), []byte("[program:x]\ncommand=/bin/x\n"), 0o644))
	out, warns, err := ImportSupervisordFile(filepath.Join(dir, "supervisord.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(filepath.Join(dir, "supervise.toml"), out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var names []string
	for _, p := range cfg.Programs {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"main", "a", "b", "x"}) || cfg.Program("main").Autostart {
		t.Errorf("programs %v (main autostart %v), want main a b x with main's autostart from b.conf\n%s", names, cfg.Program("main").Autostart, out)
	}
	for _, w := range warns {
		if w.Key == "[include]" {
			t.Errorf("a warning on a mapped include: %v", w)
		}
	}
	// A bad included file names itself.
	must(os.WriteFile(filepath.Join(dir, "conf.d", "c.conf"), []byte("[program:c]\ncommand\n"), 0o644))
	if _, _, err := ImportSupervisordFile(filepath.Join(dir, "supervisord.conf")); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "conf.d", "c.conf")+":2") {
		t.Errorf("err %v, want it to name c.conf:2", err)
	}
}

// TestImportSupervisordIncludeEdges covers the rest of [include]: its
// expansions, a glob that matches nothing, an included file's own
// [include] and [DEFAULT], and the bounds on files and bytes.
func TestImportSupervisordIncludeEdges(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("SUPERVISE_TEST_INC", "inc")
	write("inc-a.conf", "[DEFAULT]\nuser = nobody\n[include]\nfiles = nested.conf\n[program:a]\ncommand=/bin/a\n")
	write("nested.conf", "[program:nested]\ncommand=/bin/nested\n")
	main := write("main.conf", "[program:main]\ncommand=/bin/main\n[include]\nfiles = %(here)s/%(ENV_SUPERVISE_TEST_INC)s-*.conf none-*.conf\n")
	out, warns, err := ImportSupervisordFile(main)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "[program.a]") || strings.Contains(string(out), "nested") || !strings.Contains(string(out), `user = "nobody"`) {
		t.Errorf("want main and a (user nobody from the included [DEFAULT]), not the nested include:\n%s", out)
	}
	matched := false
	for _, w := range warns {
		matched = matched || w.Key == "[include]" && strings.Contains(w.Why, "none-*.conf matches no file")
	}
	if !matched {
		t.Errorf("no warning on the glob that matches nothing: %v", warns)
	}
	for _, c := range []struct{ files, err string }{
		{"", "no files="},
		{"files = %(ENV_SUPERVISE_TEST_UNSET)s.conf", "SUPERVISE_TEST_UNSET is not set"},
		{"files = %(program_name)s.conf", "no such expansion"},
		{"files = [", "syntax error"},
		{"files = many/*.conf", "more than 256 files"},
		{"files = big.conf big.conf", "in all"},
	} {
		p := write("bad.conf", "[program:main]\ncommand=/bin/main\n[include]\n"+c.files+"\n")
		if _, _, err := ImportSupervisordFile(p); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: err %v, want %q", c.files, err, c.err)
		}
		if c.files == "" {
			if err := os.Mkdir(filepath.Join(dir, "many"), 0o755); err != nil {
				t.Fatal(err)
			}
			for i := range 257 {
				write(filepath.Join("many", strconv.Itoa(i)+".conf"), "")
			}
			write("big.conf", "; "+strings.Repeat("x", maxImportSize*2/3)+"\n[program:big]\ncommand=/bin/big\n")
		}
	}
}
