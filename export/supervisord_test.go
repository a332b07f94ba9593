package export

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/supervise-dev/supervise/config"
)

func TestImportSupervisord(t *testing.T) {
	src, err := os.ReadFile("testdata/supervisord.conf")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("WEB_PORT", "8000")
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
	if strings.Join(web.Command, " ") != "/usr/bin/python3 -m http.server 8000" || web.Dir != "/srv/www" || web.User != "www-data" ||
		web.Instances != 2 || web.Restart != config.RestartAlways || len(web.SuccessExitCodes) != 2 || web.SuccessExitCodes[1] != 2 ||
		web.StopSignal != syscall.SIGQUIT || web.StopTimeout != 20*time.Second ||
		web.Env["APP_ENV"] != "production" || web.Env["GREETING"] != "hello, world" || web.Env["HOME_DIR"] != "/home/test/web" ||
		web.Stdout.File != "/var/log/web.out.log" || !web.StderrToStdout || web.Stdout.MaxSize != 50<<20 || web.Stdout.MaxFiles != 11 {
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
		"web command", "web process_name", "web startsecs", "web startretries", "worker priority",
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
		{"unclosed header", "[program:a\ncommand=x\n", "s.conf:1: unclosed section header"},
		{"empty header", "[program:a]\ncommand=x\n[]\n", "s.conf:3: a section header with no name"},
		{"bad line", "[program:a]\ncommand\n", "s.conf:2: want key = value"},
		{"no key", "[program:a]\ncommand=x\n\n: y\n", "s.conf:4: a value with no key"},
		{"broken environment", "[program:a]\ncommand=x\nenvironment=A=\"open\n", "environment: no closing quotation"},
		{"environment without a value", "[program:a]\ncommand=x\nenvironment=A=1,B=\n", "want KEY=VALUE"},
		{"unknown expansion", "[program:a]\ncommand=x %(nope)s\n", "%(nope)"},
		{"lone percent", "[program:a]\ncommand=x 5%\n", "neither %% nor"},
		{"huge width", "[program:a]\ncommand=x %(program_name)999999999s\n", "width or precision over"},
		{"unset variable", "[program:a]\ncommand=x %(ENV_IMPORT_SURELY_UNSET)s\n", "IMPORT_SURELY_UNSET is not set"},
		{"open quote", "[program:a]\ncommand=x 'y\n", "no closing quotation"},
		{"empty command", "[program:a]\ncommand='' x\n", "no program to run"},
		{"only bad names", "[program:]\ncommand=x\n", "no [program:x] section with a name"},
		{"not UTF-8", "[program:a]\ncommand=\xff\n", "s.conf:2: not UTF-8"},
		{"NUL", "[program:a]\n\ncommand=\x00\n", "s.conf:3: a NUL byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ImportSupervisord("s.conf", []byte(tc.src)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
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

// importLoad imports src and loads the result, failing the test when
// either step fails.
func importLoad(t *testing.T, src string) (*config.Config, []Warning, []byte) {
	t.Helper()
	out, warns, err := ImportSupervisord("s.conf", []byte(src))
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "supervise.toml"), out)
	if err != nil {
		t.Fatalf("the import does not load: %v\n%s", err, out)
	}
	return cfg, warns, out
}

// supervisord splits command= with Python's shlex (POSIX mode) after
// expanding %(…)s, and execs the words: nothing in the line reaches a
// shell, so $(…), backticks and ; are bytes of argv words.
func TestImportSupervisordCommandNoShell(t *testing.T) {
	t.Setenv("IMPORT_PORT", "8080 `touch /tmp/y`")
	cfg, warns, out := importLoad(t, "[program:a]\n"+
		"command=/bin/echo %(ENV_IMPORT_PORT)s $(touch /tmp/x) `id`;rm a\"b c\"d 'e\\f' \"g\\\"h\\i\" \\j %(program_name)s %%\n")
	want := []string{"/bin/echo", "8080", "`touch", "/tmp/y`", "$(touch", "/tmp/x)", "`id`;rm", "ab cd", `e\f`, `g"h\i`, "j", "a", "%"}
	if got := cfg.Program("a").Command; strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("command %q, want %q\n%s", got, want, out)
	}
	fixed := false
	for _, w := range warns {
		fixed = fixed || w.Key == "command" && strings.Contains(w.Why, "IMPORT_PORT")
	}
	if !fixed {
		t.Errorf("no warning that IMPORT_PORT was fixed at import: %v", warns)
	}
}

// A supervisord.conf larger than a supervise config may be is refused,
// not read to the end.
func TestImportSupervisordSizeBound(t *testing.T) {
	src := "[program:a]\ncommand=/bin/true\n" + strings.Repeat("; padding\n", (2<<20)/10)
	if _, _, err := ImportSupervisord("s.conf", []byte(src)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a 2 MiB file: err %v, want a refusal past the size bound", err)
	}
}

// Joining continuation lines costs what they hold, not its square: the
// bytes allocated for twice the lines stay about twice as many.
func TestImportSupervisordContinuationLinear(t *testing.T) {
	alloc := func(lines int) uint64 {
		src := "[program:a]\ncommand=/bin/true\nnotes=start\n" + strings.Repeat("\tx\n", lines)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, _, err := ImportSupervisord("s.conf", []byte(src)); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	a, b := alloc(10000), alloc(20000)
	if ratio := float64(b) / float64(a); ratio > 3 {
		t.Errorf("10,000 continuation lines allocate %d bytes, 20,000 allocate %d: %.1f times as much", a, b, ratio)
	}
	// 300,000 lines (900 KB, inside the bound) finish; the deadline only
	// bounds a hang.
	done := make(chan error, 1)
	go func() {
		_, _, err := ImportSupervisord("s.conf", []byte("[program:a]\ncommand=/bin/true\nnotes=start\n"+strings.Repeat("\tx\n", 300000)))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("300,000 continuation lines: no answer in 60s")
	}
}

// Every program name gives TOML that parses: one supervise cannot use is
// left out with a warning, others are renamed and quoted.
func TestImportSupervisordNames(t *testing.T) {
	for _, tc := range []struct{ src, skipped, kept string }{
		{"[program:]\ncommand=/bin/true\n[program:ok]\ncommand=/bin/true\n", "", "ok"},
		{"[program:b c/../..]\ncommand=/bin/true\n", "b c/../..", "b-c-..-.."},
		{"[program:...]\ncommand=/bin/true\n[program:ok]\ncommand=/bin/true\n", "...", "ok"},
		{"[program:a b]\ncommand=/bin/true\n[program:a-b]\ncommand=/bin/true\n", "a-b", "a-b"},
		{"[program:" + strings.Repeat("n", 70) + "]\ncommand=/bin/true\n[program:ok]\ncommand=/bin/true\n", strings.Repeat("n", 70), "ok"},
	} {
		out, warns, err := ImportSupervisord("s.conf", []byte(tc.src))
		if err != nil {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		var doc map[string]any
		if _, err := toml.Decode(string(out), &doc); err != nil {
			t.Errorf("%q imports as TOML that does not parse: %v\n%s", tc.src, err, out)
			continue
		}
		cfg, err := config.Parse(filepath.Join(t.TempDir(), "supervise.toml"), out)
		if err != nil {
			t.Errorf("%q: the import does not load: %v\n%s", tc.src, err, out)
			continue
		}
		if cfg.Program(tc.kept) == nil {
			t.Errorf("%q: no program %q in\n%s", tc.src, tc.kept, out)
		}
		warned := false
		for _, w := range warns {
			warned = warned || w.Program == tc.skipped && w.Key == "name"
		}
		if !warned {
			t.Errorf("%q: no name warning for %q: %v", tc.src, tc.skipped, warns)
		}
	}
}

// environment= is read as supervisord reads it (a shlex lexer, commas
// between pairs, quotes keeping commas and escaped quotes), and $ stays a
// literal byte in the loaded value.
func TestImportSupervisordEnvironment(t *testing.T) {
	t.Setenv("IMPORT_HOME", "/home/imp")
	cfg, _, out := importLoad(t, "[program:a]\ncommand=/bin/true\n"+
		`environment=K="a\"b",B='x',C="1,2",D='$HOME ${X}',E=plain/path:1.5,F="",`+"\n"+
		`  G='it''s',H="%(ENV_IMPORT_HOME)s/x",I=\,,J=x#not a comment?`+"\n")
	want := map[string]string{"K": `a"b`, "B": "x", "C": "1,2", "D": "$HOME ${X}", "E": "plain/path:1.5", "F": "",
		"G": "its", "H": "/home/imp/x", "I": ",", "J": "x"}
	p := cfg.Program("a")
	for k, v := range want {
		if got, ok := p.Env[k]; !ok || got != v {
			t.Errorf("env %s = %q (set %v), want %q\n%s", k, got, ok, v, out)
		}
	}
	if len(p.Env) != len(want) {
		t.Errorf("env %q, want %q", p.Env, want)
	}
}

// The file is read only when it is a regular file within the bound: a
// FIFO nobody writes, a device that never ends and a directory are
// refused at once.
func TestImportSupervisordFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.conf")
	if err := os.WriteFile(big, []byte("[program:a]\ncommand=/bin/true\n"+strings.Repeat(";\n", 1<<19)), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:        "not a regular file but a FIFO",
		"/dev/zero": "not a regular file but a device",
		dir:         "not a regular file but a directory",
		big:         "larger than 1048576 bytes",
	} {
		done := make(chan error, 1)
		go func() { _, _, err := ImportSupervisordFile(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: err %v, want %q", path, err, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no answer in 30s", path)
		}
	}
	t.Setenv("WEB_PORT", "8000")
	if _, _, err := ImportSupervisordFile("testdata/supervisord.conf"); err != nil {
		t.Errorf("a real file: %v", err)
	}
}

// A container's supervisord.conf: quoted words, %(here)s, [DEFAULT],
// environment= over continuation lines, logs to the console.
func TestImportSupervisordDocker(t *testing.T) {
	src, err := os.ReadFile("testdata/supervisord-docker.conf")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PHP_MEMORY", "256M")
	cfg, _, out := importLoad(t, string(src))
	here, _ := filepath.Abs("s.conf")
	nginx, queue, fpm := cfg.Program("nginx"), cfg.Program("queue"), cfg.Program("php-fpm")
	if strings.Join(nginx.Command, "|") != "nginx|-g|daemon off; error_log /dev/stderr info;" || nginx.Stdout.File != "" || nginx.StopTimeout != 15*time.Second {
		t.Errorf("nginx: %+v\n%s", nginx, out)
	}
	if fpm.Command[4] != "memory_limit=256M" {
		t.Errorf("php-fpm: %q", fpm.Command)
	}
	// WORKER=%(process_num)d: each instance computes it in sh
	if queue.Command[0] != "/bin/sh" || !strings.Contains(queue.Command[2], " 'php' "+shellQuote(filepath.Join(filepath.Dir(here), "artisan"))+" ") ||
		!strings.Contains(queue.Command[2], `export WORKER="$(printf '%d' "$((SUPERVISE_INSTANCE + 1))")"; `) || queue.Instances != 4 ||
		queue.Env["TZ"] != "UTC" || queue.Env["APP_ROOT"] != "/var/www/html" ||
		queue.Env["APP_KEY"] != "base64:x$y+z/w==" || queue.Env["QUEUE_NAME"] != "default,high" ||
		queue.Env["PATH"] != "/usr/local/bin:"+os.Getenv("PATH") || queue.StopTimeout != time.Hour {
		t.Errorf("queue: %+v\n%s", queue, out)
	}
}

// What a small input can stand for stays bounded: a width or %(here)s
// cannot make a value past 1 MiB, and [DEFAULT] keys are not copied into
// every program (10,000 of each would be 10^8 copies and warnings).
func TestImportSupervisordAmplification(t *testing.T) {
	src := "[program:a]\ncommand=x " + strings.Repeat("%(program_name)1000s", 2000) + "\n"
	if _, _, err := ImportSupervisord("s.conf", []byte(src)); err == nil || !strings.Contains(err.Error(), "expands to larger than") {
		t.Errorf("2,000 widths of 1,000: err %v", err)
	}
	var b strings.Builder
	b.WriteString("[DEFAULT]\nautostart=false\n")
	for i := range 10000 {
		fmt.Fprintf(&b, "k%d=v\n", i)
	}
	for i := range 10000 {
		fmt.Fprintf(&b, "[program:p%d]\ncommand=x\n", i)
	}
	done := make(chan []Warning, 1)
	go func() {
		out, warns, err := ImportSupervisord("s.conf", []byte(b.String()))
		if err != nil || !strings.Contains(string(out), "[program.p9999]\ncommand = [\"x\"]\nautostart = false\n") {
			t.Errorf("err %v", err)
		}
		done <- warns
	}()
	select {
	case warns := <-done:
		if len(warns) > 10000 {
			t.Errorf("%d warnings for 10,000 unknown defaults", len(warns))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("10,000 programs and defaults: no answer in 60s")
	}
}
