package export

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/supervise-dev/supervise/config"
)

// directives reads a unit file as systemd's parser does (a line ends at
// \n or \r, a trailing backslash joins the next line, # and ; start
// comments) and lists its SECTION/KEY entries in order.
func directives(unit string) []string {
	lines := strings.FieldsFunc(unit, func(r rune) bool { return r == '\n' || r == '\r' })
	var out []string
	section := ""
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
			i++
			l = l[:len(l)-1] + " " + strings.TrimSpace(lines[i])
		}
		if l[0] == '[' {
			section = l
			continue
		}
		k, _, _ := strings.Cut(l, "=")
		out = append(out, section+strings.TrimSpace(k))
	}
	return out
}

// systemdDump loads the units in dir with systemd itself (its test mode,
// which parses every unit as PID 1 would and prints what it read) and
// returns the printout. systemd refuses test mode as root: it runs as
// nobody then.
func systemdDump(t *testing.T, files []File, unit string) string {
	t.Helper()
	bin := "/lib/systemd/systemd"
	if _, err := os.Stat(bin); err != nil {
		t.Fatal("systemd is missing (Debian's systemd package)")
	}
	dir, err := os.MkdirTemp("", "units-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The default dependencies of a service, so the transaction loads.
	for _, name := range []string{"sysinit.target", "basic.target", "shutdown.target", "multi-user.target"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("[Unit]\nDescription=stub\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "--test", "--system", "--no-pager", "--log-target=console", "--unit="+unit)
	cmd.Env = []string{"SYSTEMD_UNIT_PATH=" + dir, "PATH=/usr/bin:/bin"}
	if os.Getuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("systemd --test: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// dumpUnit is one unit's part of a systemd --test printout.
func dumpUnit(t *testing.T, dump, unit string) string {
	t.Helper()
	_, rest, ok := strings.Cut(dump, "\t-> Unit "+unit+":\n")
	if !ok {
		t.Fatalf("systemd did not load %s", unit)
	}
	if i := strings.Index(rest, "\n\t-> Unit "); i >= 0 {
		rest = rest[:i+1]
	}
	return rest
}

// dumpCommands lists the command lines systemd read for an Exec
// directive, each as the argv the program gets: systemd prints the words
// shell-quoted, and replaces $$ by $ when it runs them.
func dumpCommands(t *testing.T, unit, directive string) [][]string {
	t.Helper()
	var out [][]string
	_, rest, ok := strings.Cut(unit, "\t\t-> "+directive+":\n")
	if !ok {
		return nil
	}
	for _, l := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(l, "\t\t\t") {
			break
		}
		if cl, ok := strings.CutPrefix(l, "\t\t\tCommand Line: "); ok {
			words := unquoteDump(t, cl)
			for i, w := range words {
				words[i] = dollars(t, w)
			}
			out = append(out, words)
		}
	}
	return out
}

// unquoteDump splits a command line as systemd prints it: words between
// spaces, a word with anything special in double quotes with C escapes.
func unquoteDump(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	for len(s) > 0 {
		if s[0] == ' ' {
			s = s[1:]
			continue
		}
		if s[0] != '"' {
			w, rest, _ := strings.Cut(s, " ")
			words, s = append(words, w), rest
			continue
		}
		var b strings.Builder
		i := 1
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] != '\\' {
				b.WriteByte(s[i])
				continue
			}
			i++
			switch c := s[i]; c {
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			case 'x':
				n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
				if err != nil {
					t.Fatalf("escape in %q: %v", s, err)
				}
				b.WriteByte(byte(n))
				i += 2
			case '0', '1', '2', '3':
				n, err := strconv.ParseUint(s[i:i+3], 8, 8)
				if err != nil {
					t.Fatalf("escape in %q: %v", s, err)
				}
				b.WriteByte(byte(n))
				i += 2
			default:
				b.WriteByte(c)
			}
		}
		if i >= len(s) {
			t.Fatalf("unterminated quote in %q", s)
		}
		words, s = append(words, b.String()), s[i+1:]
	}
	return words
}

// dollars is what systemd makes of a stored word when it runs it: $$ is
// a $; a lone $ would be a variable reference, which no exported word
// may hold.
func dollars(t *testing.T, w string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		if w[i] != '$' {
			b.WriteByte(w[i])
			continue
		}
		if i+1 >= len(w) || w[i+1] != '$' {
			t.Errorf("word %q holds a $ systemd expands", w)
			return w
		}
		b.WriteByte('$')
		i++
	}
	return b.String()
}

// dumpHas checks that systemd read property as exactly value.
func dumpHas(t *testing.T, unit, property, value string) {
	t.Helper()
	if !strings.Contains(unit, "\t\t"+property+": "+value+"\n") {
		var got []string
		for _, l := range strings.Split(unit, "\n") {
			if strings.HasPrefix(l, "\t\t"+property+":") {
				got = append(got, l)
			}
		}
		t.Errorf("systemd read %s as %q, want %q", property, got, value)
	}
}

type hostileField struct {
	key    string // the config key a refusal names (a prefix when it ends in '.')
	writes writes // which values must be written, not refused
	src    func(v string) string
	check  func(t *testing.T, unit string, p *config.Program)
}

type writes int

const (
	writesAll   writes = iota // a setting systemd unquotes: every value fits
	writesRaw                 // a setting read to the end of the line: the raw values fit
	writesNames               // Environment= names: none of the hostile values is one
)

func execCheck(directive string, argv func(p *config.Program) []string) func(t *testing.T, unit string, p *config.Program) {
	return func(t *testing.T, unit string, p *config.Program) {
		t.Helper()
		got := dumpCommands(t, unit, directive)
		if want := [][]string{argv(p)}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("systemd runs %s %q, want %q", directive, got, want)
		}
	}
}

func hookField(key, directive string) hostileField {
	return hostileField{key, writesAll,
		func(v string) string { return key + " = { command = [\"/bin/echo\", " + tomlQuote(v) + "] }\n" },
		execCheck(directive, func(p *config.Program) []string {
			h := map[string]*config.Hook{"hooks.pre_start": p.Hooks.PreStart, "hooks.post_start": p.Hooks.PostStart, "hooks.pre_stop": p.Hooks.PreStop, "hooks.post_stop": p.Hooks.PostStop}[key]
			if directive == "ExecStop" { // behind the guard that skips it after a crash
				return append([]string{"/bin/sh", "-c", stopGuard, "sh"}, h.Command...)
			}
			return h.Command
		})}
}

var hostileFields = []hostileField{
	{"command", writesAll, func(v string) string { return "command = [\"/bin/echo\", " + tomlQuote(v) + "]\n" },
		execCheck("ExecStart", func(p *config.Program) []string { return p.Command })},
	{"env.K", writesAll, func(v string) string { return "command = \"/bin/true\"\nenv = { K = " + tomlQuote(v) + " }\n" },
		func(t *testing.T, unit string, p *config.Program) { dumpHas(t, unit, "Environment", "K="+p.Env["K"]) }},
	{"dir", writesRaw, func(v string) string { return "dir = " + tomlQuote("/tmp/d/"+v) + "\n" },
		func(t *testing.T, unit string, p *config.Program) { dumpHas(t, unit, "WorkingDirectory", p.Dir) }},
	{"stdout.file", writesRaw, func(v string) string { return "stdout = { file = " + tomlQuote("/tmp/o/"+v) + " }\n" },
		func(t *testing.T, unit string, p *config.Program) {
			dumpHas(t, unit, "StandardOutputFileToAppend", p.Stdout.File)
		}},
	{"stderr.file", writesRaw, func(v string) string { return "stderr = { file = " + tomlQuote("/tmp/e/"+v) + " }\n" },
		func(t *testing.T, unit string, p *config.Program) {
			dumpHas(t, unit, "StandardErrorFileToAppend", p.Stderr.File)
		}},
	{"user", writesRaw, func(v string) string { return "user = " + tomlQuote(v) + "\n" },
		func(t *testing.T, unit string, p *config.Program) { dumpHas(t, unit, "User", p.User) }},
	{"group", writesRaw, func(v string) string { return "group = " + tomlQuote(v) + "\n" },
		func(t *testing.T, unit string, p *config.Program) { dumpHas(t, unit, "Group", p.Group) }},
	{"groups", writesRaw, func(v string) string { return "groups = [" + tomlQuote(v) + "]\n" },
		func(t *testing.T, unit string, p *config.Program) {
			dumpHas(t, unit, "SupplementaryGroups", p.Groups[0])
		}},
	{"env.", writesNames, func(v string) string { return "command = \"/bin/true\"\nenv = { " + tomlQuote(v) + " = \"1\" }\n" },
		func(t *testing.T, unit string, p *config.Program) {}},
	hookField("hooks.pre_start", "ExecStartPre"),
	hookField("hooks.post_start", "ExecStartPost"),
	hookField("hooks.pre_stop", "ExecStop"),
	hookField("hooks.post_stop", "ExecStopPost"),
}

var hostileValues = []struct {
	v   string
	raw bool // fits a setting systemd reads to the end of its line as it is
}{
	{"a\nExecStartPre=/bin/false injected", false},
	{"a\rExecStartPre=/bin/false injected", false},
	{"ctl\x01\x1b[31m\x7f", false},
	{"tab\there", false},
	{"100%i %n %% %", true},
	{"$HOME $$ $(X) ${Y} $", true},
	{`back\slash \n \x41 \;`, true},
	{`trailing\`, false},
	{`quote"s 'and' "`, true},
	{" spaced ", false},
	{";", true},
	{"é ü ✓", true},
}

// A hostile value in every field the systemd export writes: the export
// either refuses it (an error, and a warning naming the program and the
// key), or systemd reads the unit back with exactly the config's value
// and with no directive a plain value would not give.
func TestSystemdHostileValues(t *testing.T) {
	written := 0
	for _, f := range hostileFields {
		plainFiles := hostileExport(t, f, "plain")
		if plainFiles == nil {
			t.Fatalf("%s: the plain value was refused", f.key)
		}
		plain := directives(unit(t, plainFiles, "app-p.service"))
		for _, hv := range hostileValues {
			t.Run(f.key+"/"+strconv.Quote(hv.v), func(t *testing.T) {
				src := "[program.p]\n" + f.src(hv.v)
				if !strings.HasPrefix(f.src(hv.v), "command") {
					src = "[program.p]\ncommand = \"/bin/true\"\n" + f.src(hv.v)
				}
				cfg, err := config.Parse(filepath.Join(t.TempDir(), "supervise.toml"), []byte(src))
				if err != nil {
					t.Skipf("the config refuses it: %v", err)
				}
				files, warns, err := Systemd(cfg, SystemdOptions{Prefix: "app"})
				if err != nil {
					named := false
					for _, w := range warns {
						named = named || w.Program == "p" && (w.Key == f.key || strings.HasSuffix(f.key, ".") && strings.HasPrefix(w.Key, f.key))
					}
					if !named {
						t.Errorf("refused (%v) without a warning on program p, %s: %v", err, f.key, warns)
					}
					if f.writes == writesAll || f.writes == writesRaw && hv.raw {
						t.Errorf("refused a value systemd can read: %v", err)
					}
					return
				}
				written++
				u := unit(t, files, "app-p.service")
				if got := directives(u); !slices.Equal(got, plain) {
					t.Errorf("directives %q, want %q as for a plain value:\n%s", got, plain, u)
				}
				verify(t, files)
				f.check(t, dumpUnit(t, systemdDump(t, files, "app.target"), "app-p.service"), cfg.Programs[0])
			})
		}
	}
	if written < len(hostileFields) {
		t.Errorf("only %d hostile values were written: the table tests too little", written)
	}
}

func hostileExport(t *testing.T, f hostileField, v string) []File {
	t.Helper()
	src := "[program.p]\n" + f.src(v)
	if !strings.HasPrefix(f.src(v), "command") {
		src = "[program.p]\ncommand = \"/bin/true\"\n" + f.src(v)
	}
	cfg := parse(t, src)
	files, _, err := Systemd(cfg, SystemdOptions{Prefix: "app"})
	if err != nil {
		return nil
	}
	return files
}

// The config file's path reaches a comment and the target's Description:
// a folder named with a line break must not add a directive.
func TestSystemdHostileConfigPath(t *testing.T) {
	for _, hv := range hostileValues {
		t.Run(strconv.Quote(hv.v), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), hv.v)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(filepath.Join(dir, "supervise.toml"), []byte("[program.p]\ncommand = \"/bin/true\"\n"))
			if err != nil {
				t.Skipf("the config refuses it: %v", err)
			}
			files, warns, err := Systemd(cfg, SystemdOptions{Prefix: "app"})
			if err != nil {
				// The folder is the program's dir, its WorkingDirectory=.
				if hv.raw || !slices.ContainsFunc(warns, func(w Warning) bool { return w.Program == "p" && w.Key == "dir" }) {
					t.Errorf("refused (%v) with the warnings %v", err, warns)
				}
				return
			}
			plain, _, err := Systemd(parse(t, "[program.p]\ncommand = \"/bin/true\"\n"), SystemdOptions{Prefix: "app"})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"app.target", "app-p.service"} {
				want := directives(unit(t, plain, name))
				if got := directives(unit(t, files, name)); !slices.Equal(got, want) {
					t.Errorf("%s: directives %q, want %q:\n%s", name, got, want, unit(t, files, name))
				}
			}
			verify(t, files)
			target := dumpUnit(t, systemdDump(t, files, "app.target"), "app.target")
			if !strings.Contains(target, "\t\tDescription: app: the programs of ") {
				t.Errorf("target:\n%s", target)
			}
		})
	}
}

// The first word of a command is a path to supervise: systemd must not
// read a leading + @ - : ! !! as its prefixes (+ runs as root whatever
// User= says). A relative path runs from dir, as supervise runs it.
func TestSystemdCommandPrefixes(t *testing.T) {
	for _, prefix := range []string{"+", "@", "-", ":", "!", "!!", "-+", "@-"} {
		for _, key := range []string{"command", "hooks.pre_start", "hooks.post_start", "hooks.pre_stop", "hooks.post_stop"} {
			t.Run(prefix+"/"+key, func(t *testing.T) {
				dir := t.TempDir()
				prog := filepath.Join(dir, prefix, "bin", "sh")
				if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(prog, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				cmd := "[" + tomlQuote(prefix+"/bin/sh") + `, "-c", "exit 0"]`
				src := "[program.p]\nuser = \"daemon\"\n"
				if key == "command" {
					src += "command = " + cmd + "\n"
				} else {
					src += "command = \"/bin/true\"\n" + key + " = { command = " + cmd + " }\n"
				}
				cfg, err := config.Parse(filepath.Join(dir, "supervise.toml"), []byte(src))
				if err != nil {
					t.Fatal(err)
				}
				files, _, err := Systemd(cfg, SystemdOptions{Prefix: "app"})
				if err != nil {
					t.Fatal(err)
				}
				directive := map[string]string{"command": "ExecStart", "hooks.pre_start": "ExecStartPre", "hooks.post_start": "ExecStartPost", "hooks.pre_stop": "ExecStop", "hooks.post_stop": "ExecStopPost"}[key]
				u := unit(t, files, "app-p.service")
				for _, l := range strings.Split(u, "\n") {
					if v, ok := strings.CutPrefix(l, directive+"="); ok {
						if directive == "ExecStopPost" {
							v = strings.TrimPrefix(v, "-") // the exporter's own: a failure is only logged
						}
						if !strings.HasPrefix(v, "/") && !strings.HasPrefix(v, `"/`) {
							t.Errorf("systemd reads a prefix: %s", l)
						}
					}
				}
				verify(t, files)
				got := dumpCommands(t, dumpUnit(t, systemdDump(t, files, "app.target"), "app-p.service"), directive)
				want := [][]string{{prog, "-c", "exit 0"}}
				if directive == "ExecStop" { // behind the guard that skips it after a crash
					want[0] = append([]string{"/bin/sh", "-c", stopGuard, "sh"}, want[0]...)
				}
				if !slices.EqualFunc(got, want, slices.Equal) {
					t.Errorf("systemd runs %q, want %q:\n%s", got, want, u)
				}
			})
		}
	}
}

// A program name found nowhere is written for systemd to search its own
// PATH; one that starts with a prefix character cannot be written so.
func TestSystemdCommandPrefixNotFound(t *testing.T) {
	for _, name := range []string{"+no-such-program", "@no-such-program", "!!no-such-program", "no-such-$program"} {
		cfg := parse(t, "[program.p]\ncommand = ["+tomlQuote(name)+"]\n")
		_, warns, err := Systemd(cfg, SystemdOptions{Prefix: "app"})
		if err == nil {
			t.Errorf("%s: exported", name)
		}
		named := false
		for _, w := range warns {
			named = named || w.Program == "p" && w.Key == "command" && strings.Contains(w.Why, strconv.Quote(name))
		}
		if !named {
			t.Errorf("%s: no warning naming program p, command and the word: %v", name, warns)
		}
	}
}

// A program found on the program's PATH under a name that starts with a
// prefix character is written as its absolute path.
func TestSystemdCommandPrefixOnPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "+tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(filepath.Join(dir, "supervise.toml"), []byte("[program.p]\ncommand = \"+tool\"\nenv = { PATH = "+tomlQuote(bin)+" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	files, _, err := Systemd(cfg, SystemdOptions{Prefix: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if u := unit(t, files, "app-p.service"); !strings.Contains(u, "\nExecStart="+filepath.Join(bin, "+tool")+"\n") {
		t.Errorf("unit:\n%s", u)
	}
}
