package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/supervise-dev/supervise/watch/glob"
)

// FuzzParse: Parse never panics; a refusal is a non-empty ErrorList whose
// every entry names the file, a line within it (0 when it has none), and a
// one-line message; an accepted file is valid throughout; and the line
// index knows every key toml reports.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("..", "config.example.toml")); err == nil {
		f.Add(string(data))
	}
	f.Add("[program.web]\ncommand = \"x\"\nrestart = \"sometimes\"\n")
	f.Add("[defaults]\nenv = { A = \"${HOME:-x}\" }\n[program.a]\ncommand = [\"a\"]\ndepends_on = [\"b\"]\n[program.b]\ncommand = \"b 'c d'\"\ndepends_on = [\"a\"]\n")
	f.Add("[program.\"x:y\"]\ncommand = \"\"\"\nmulti\nline\"\"\"\n[program.z.sandbox]\nrlimits = { nofile = { soft = 2, hard = 1 } }\n")
	f.Add("a = [\n 1,\n { b = 'c' },\n]\n[[t]]\n[[t]]\nk = 1979-05-27\n")
	f.Add("[supervisor]\nwatch_config = false\n[program.w]\ncommand = \"w\"\n[program.w.watch]\npaths = [\"src\", \"/abs\"]\ninclude = [\"**/*.go\", \"[\"]\nexclude = \"vendor\"\ndebounce = \"0s\"\nsignal = \"HUP\"\n")
	f.Fuzz(func(t *testing.T, src string) {
		const file = "fuzz.toml"
		cfg, err := parse(file, []byte(src), env("HOME", "/root"))
		lines := strings.Count(src, "\n") + 1
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error is not a non-empty ErrorList: %T %v", err, err)
			}
			if cfg != nil {
				t.Fatalf("got a config and an error")
			}
			for _, e := range list {
				if e.File != file || e.Line < 0 || e.Line > lines || e.Msg == "" {
					t.Fatalf("bad error %#v (file has %d lines)", e, lines)
				}
				if strings.ContainsAny(e.Error(), "\n\r") {
					t.Fatalf("error spans lines: %q", e.Error())
				}
			}
		} else {
			checkValid(t, cfg)
			again, err := parse(file, []byte(src), env("HOME", "/root"))
			if err != nil || !reflect.DeepEqual(cfg, again) {
				t.Fatalf("parse is not deterministic")
			}
		}
		var v map[string]any
		if md, err := toml.Decode(src, &v); err == nil {
			ix := indexLines(src)
			for _, k := range md.Keys() {
				if _, ok := ix[lineKey(k)]; !ok {
					t.Fatalf("no line for key %q", []string(k))
				}
			}
		}
	})
}

// checkValid asserts what Parse promises of an accepted config.
func checkValid(t *testing.T, cfg *Config) {
	t.Helper()
	if cfg == nil || len(cfg.Programs) == 0 {
		t.Fatal("accepted a config without programs")
	}
	s := cfg.Supervisor
	if s.Workers < 1 || s.ShutdownTimeout < 0 || (s.LogFormat != "text" && s.LogFormat != "json") {
		t.Fatalf("bad supervisor %+v", s)
	}
	seen := map[string]bool{}
	for _, p := range cfg.Programs {
		if seen[p.Name] || validName(p.Name) != nil {
			t.Fatalf("bad or duplicate name %q", p.Name)
		}
		seen[p.Name] = true
		if len(p.Command) == 0 || p.Command[0] == "" || !filepath.IsAbs(p.Dir) || p.Instances < 1 ||
			p.StopSignal == 0 || p.StopTimeout < 0 || len(p.SuccessExitCodes) == 0 && p.SuccessExitCodes != nil {
			t.Fatalf("bad program %+v", p)
		}
		switch p.Restart {
		case RestartAlways, RestartOnFailure, RestartNever:
		default:
			t.Fatalf("bad restart %q", p.Restart)
		}
		if b := p.Backoff; b.Initial < 0 || b.Max < b.Initial || b.ResetAfter <= 0 {
			t.Fatalf("bad backoff %+v", b)
		}
		if sb := p.Sandbox; sb.MemoryMax < 0 || sb.CPUMax < 0 || sb.PidsMax < 0 || (sb.PidsMax > 0 && sb.PidsMax < 8) || sb.Umask < -1 || sb.Umask > 0o777 {
			t.Fatalf("bad sandbox %+v", sb)
		}
		for _, rl := range p.Sandbox.Rlimits {
			if rl.Soft > rl.Hard {
				t.Fatalf("rlimit soft above hard: %+v", rl)
			}
		}
		for _, h := range []*Hook{p.Hooks.PreStart, p.Hooks.PostStart, p.Hooks.PreStop, p.Hooks.PostStop} {
			if h != nil && ((h.Command == nil) == (h.HTTP == nil) || h.Timeout <= 0) {
				t.Fatalf("bad hook %+v", h)
			}
		}
		if w := p.Watch; w != nil {
			if len(w.Paths) == 0 || w.Debounce < 0 || w.Signal < 0 {
				t.Fatalf("bad watch %+v", w)
			}
			for _, path := range w.Paths {
				if !filepath.IsAbs(path) {
					t.Fatalf("watch path %q is not absolute", path)
				}
			}
			for _, g := range append(slices.Clone(w.Include), w.Exclude...) {
				if _, err := glob.Compile(g); err != nil {
					t.Fatalf("accepted the bad glob %q: %v", g, err)
				}
			}
		}
	}
	for _, p := range cfg.Programs {
		for _, d := range p.DependsOn {
			if !seen[d] {
				t.Fatalf("%s depends on unknown %q", p.Name, d)
			}
		}
	}
	if c := findCycles(cfg.Programs); len(c) > 0 {
		t.Fatalf("accepted a cycle: %v", c)
	}
	for _, n := range s.ExitOn {
		if !seen[n] {
			t.Fatalf("exit_on names unknown %q", n)
		}
	}
}

// FuzzSplitCommand: never panics, and words quoted back split to
// themselves.
func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{`a 'b c' "d\"e" f\ g`, `x "" ''`, "a \\\nb", `echo $HOME`, `'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitCommand(s)
		if err != nil {
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := SplitCommand(strings.Join(quoted, " "))
		if err != nil || !reflect.DeepEqual(again, words) && len(words) > 0 {
			t.Fatalf("round trip of %q: %q → %q, %v", s, words, again, err)
		}
	})
}

// FuzzParseEnv: never panics; errors carry a line inside the file.
func FuzzParseEnv(f *testing.F) {
	f.Add("A=1\nexport B='x'\nC=\"multi\nline\"\n# c\n")
	f.Add("broken\nQ=\"open\n")
	f.Fuzz(func(t *testing.T, src string) {
		vars, err := parseEnv(".env", src, nil)
		lines := strings.Count(strings.ReplaceAll(src, "\r\n", "\n"), "\n") + 1
		if err != nil {
			list, ok := err.(ErrorList)
			if !ok || len(list) == 0 || vars != nil {
				t.Fatalf("bad error %T %v", err, err)
			}
			for _, e := range list {
				if e.Line < 1 || e.Line > lines || e.Msg == "" {
					t.Fatalf("bad error %#v", e)
				}
			}
			return
		}
		for k := range vars {
			if !envNameRE().MatchString(k) {
				t.Fatalf("bad name %q", k)
			}
		}
	})
}
