package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileTOML are files that crashed or exhausted the decoder before the
// bounds: each must be refused at the line where it crosses a bound.
func hostileTOML() map[string]string {
	const n = 500_000 // just under maxFileSize
	return map[string]string{
		// A fatal "goroutine stack exceeds" in the decoder's recursion.
		"nested arrays": "a = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n",
		// 40 KB that grew the heap past 4 GB.
		"nested inline tables": "a = " + strings.Repeat("{b=", 10_000) + "1" + strings.Repeat("}", 10_000) + "\n",
		"mixed nesting":        "[program.x]\ncommand = \"x\"\nenv = " + strings.Repeat("[{a=", 20) + "1" + strings.Repeat("}]", 20) + "\n",
	}
}

func TestHostileNestingIsRefused(t *testing.T) {
	for name, src := range hostileTOML() {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("hostile.toml", []byte(src))
			var list ErrorList
			if !errors.As(err, &list) || len(list) != 1 {
				t.Fatalf("got %v, want one error", err)
			}
			e := list[0]
			if e.File != "hostile.toml" || e.Line < 1 || !strings.Contains(e.Msg, "nested more than 32 deep") {
				t.Fatalf("got %q", e.Error())
			}
		})
	}
}

func TestNestingBoundIsExact(t *testing.T) {
	nest := func(d int) string {
		return "[program.x]\ncommand = \"x\"\n[program.y]\ncommand = \"y\"\nz = " + strings.Repeat("[", d) + strings.Repeat("]", d) + "\n"
	}
	if err := checkTOMLBounds("f", []byte(nest(maxNesting))); err != nil {
		t.Fatalf("depth %d refused: %v", maxNesting, err)
	}
	if err := checkTOMLBounds("f", []byte(nest(maxNesting+1))); err == nil || !strings.Contains(err.Error(), "f:5:") {
		t.Fatalf("depth %d: got %v, want an error at f:5", maxNesting+1, err)
	}
}

// Brackets inside strings and comments are text, not nesting; the line
// count goes on across multi-line strings.
func TestBoundsScanSkipsStringsAndComments(t *testing.T) {
	deep := strings.Repeat("[", 40)
	for _, src := range []string{
		`a = "` + deep + `"`,
		`a = "\"` + deep + `"`,
		`a = '` + deep + `\'`,
		"a = \"\"\"\n" + deep + "\n\"\"\"",
		"a = \"\"\"x\\\"\"\"" + deep + "\"\"\"",
		"a = '''\n" + deep + "'''",
		"a = 1 # " + deep,
		"a = \"unterminated\nb = 1",
	} {
		if err := checkTOMLBounds("f", []byte(src)); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
	src := "a = \"\"\"\n\n\n\"\"\"\nb = '''\n'''\nc = " + strings.Repeat("[", 40)
	err := checkTOMLBounds("f", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "f:7:") {
		t.Fatalf("got %v, want the error at f:7", err)
	}
}

func TestTooManyTablesIsRefused(t *testing.T) {
	var b strings.Builder
	for i := range maxTables + 1 {
		b.WriteString("[t")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString("]\n")
	}
	_, err := Parse("f.toml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "more than 20000 table headers") {
		t.Fatalf("got %v", err)
	}
}

func TestOversizedFilesAreRefused(t *testing.T) {
	big := []byte("# " + strings.Repeat("x", maxFileSize) + "\n")
	if _, err := Parse("f.toml", big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("TOML: got %v", err)
	}
	if _, err := ParseProcfile("Procfile", big, ProcfileOptions{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Procfile: got %v", err)
	}
}

func TestProcfileAndEnvLineBounds(t *testing.T) {
	long := "web: echo " + strings.Repeat("x", maxLineLen) + "\n"
	if _, err := ParseProcfile("Procfile", []byte(long), ProcfileOptions{}); err == nil || !strings.Contains(err.Error(), "Procfile:1: line longer than") {
		t.Errorf("long Procfile line: got %v", err)
	}
	many := strings.Repeat("# c\n", maxLines) + "web: echo hi\n"
	if _, err := ParseProcfile("Procfile", []byte(many), ProcfileOptions{}); err == nil || !strings.Contains(err.Error(), "more than 10000 lines") {
		t.Errorf("many Procfile lines: got %v", err)
	}
	exact := strings.Repeat("# c\n", maxLines-1) + "web: echo hi\n"
	if _, err := ParseProcfile("Procfile", []byte(exact), ProcfileOptions{}); err != nil {
		t.Errorf("%d lines refused: %v", maxLines, err)
	}
	if _, err := parseEnv(".env", "A="+strings.Repeat("x", maxLineLen), nil); err == nil || !strings.Contains(err.Error(), ".env:1: line longer than") {
		t.Errorf("long .env line: got %v", err)
	}
	if _, err := parseEnv(".env", strings.Repeat("A=1\n", maxLines+1), nil); err == nil || !strings.Contains(err.Error(), "more than 10000 lines") {
		t.Errorf("many .env lines: got %v", err)
	}
}

// Thousands of mistakes come back as the first hundred and a count.
func TestErrorListIsBounded(t *testing.T) {
	var src strings.Builder
	for i := range 500 {
		src.WriteString("k" + strings.Repeat("x", i) + " = 1\n")
	}
	_, err := Parse("f.toml", []byte(src.String()))
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("got %v", err)
	}
	if len(list) != maxErrors+1 || !strings.Contains(list[maxErrors].Msg, "more problems") {
		t.Fatalf("got %d errors, last %q", len(list), list[len(list)-1].Error())
	}
}

// Load goes through the same bounds (it is what check, run and a reload call).
func TestLoadRefusesHostileFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "supervise.toml")
	if err := os.WriteFile(p, []byte(hostileTOML()["nested arrays"]), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p+":1: ") {
		t.Fatalf("got %v", err)
	}
}

// A key of thousands of parts (20 KB) took the decoder gigabytes: dotted
// keys, table headers and dotted keys in inline tables are refused past
// maxKeyParts parts, counted along the whole path (a probe's header, the
// deepest key a config has, is 7).
func TestLongKeysAreRefused(t *testing.T) {
	parts := func(n int) string { return "x" + strings.Repeat(".a", n-1) }
	for name, c := range map[string]struct {
		src  string
		line int
	}{
		"dotted key":        {"[program.a]\ncommand = 'x'\n" + parts(10_000) + " = 1\n", 3},
		"table header":      {"[program.a]\ncommand = 'x'\n[" + parts(10_000) + "]\n", 3},
		"array header":      {"[[" + parts(10_000) + "]]\n", 1},
		"in an inline":      {"a = {" + parts(10_000) + " = 1}\n", 1},
		"header and key":    {"[" + parts(5) + "]\n" + parts(5) + " = 1\n", 2},
		"nested inlines":    {"a = {" + strings.Repeat("b.b.b = {", 11) + "c = 1" + strings.Repeat("}", 12) + "\n", 1},
		"quoted key parts":  {"\"x\"" + strings.Repeat(".'a'", 10_000) + " = 1\n", 1},
		"blanks around dot": {"x" + strings.Repeat(" . a", 10_000) + " = 1\n", 1},
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = Parse("k.toml", []byte(c.src)) })
			want := fmt.Sprintf("k.toml:%d: ", c.line)
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "more than 8 parts") {
				t.Fatalf("got %v, want %s… more than 8 parts", err, want)
			}
			if n > 16<<20 {
				t.Errorf("refusing it allocated %d MiB", n>>20)
			}
		})
	}
	ok := "[program.a]\ncommand = 'x'\n[" + parts(4) + "]\n" + parts(4) + " = 1\n" +
		"[program.a.probes.liveness]\nhttp = { url = 'http://x', headers = { Host = 'h' } }\n"
	if err := checkTOMLBounds("k.toml", []byte(ok)); err != nil {
		t.Errorf("a path of 8 parts refused: %v", err)
	}
}

// Every key/value pair and array element costs the decoder and the
// loader a few hundred bytes: a file of more than maxValues is refused.
func TestTooManyValuesAreRefused(t *testing.T) {
	for name, src := range map[string]string{
		"keys":           strings.Repeat("k = 1\n", maxValues+1),
		"array elements": "a = [" + strings.Repeat("1,", maxValues+1) + "]\n",
		"inline tables":  "a = [" + strings.Repeat("{},", maxValues+1) + "]\n",
	} {
		t.Run(name, func(t *testing.T) {
			err := checkTOMLBounds("v.toml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d keys, key parts and array elements", maxValues)) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// Programs defined by dotted keys need no table header; they are bounded
// on their own.
func TestTooManyProgramsAreRefused(t *testing.T) {
	var b strings.Builder
	for i := range maxPrograms + 1 {
		fmt.Fprintf(&b, "program.p%d.command = 'x'\n", i)
	}
	_, err := Parse("p.toml", []byte(b.String()))
	want := fmt.Sprintf("p.toml:%d: program.p%d: more than %d programs", maxPrograms+1, maxPrograms, maxPrograms)
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// Each program decodes [defaults] anew: values times programs is bounded,
// and so are the environments of all programs together.
func TestDefaultsOverManyProgramsAreBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("[defaults.env]\n")
	for i := range 100 {
		fmt.Fprintf(&b, "D%d = '1'\n", i)
	}
	for i := range maxDefaultsApplied / 100 {
		fmt.Fprintf(&b, "[program.p%d]\ncommand = 'x'\n", i)
	}
	_, err := Parse("d.toml", []byte(b.String()))
	if err == nil || !strings.HasPrefix(err.Error(), "d.toml:1: defaults: 102 values applied to 2000 programs") {
		t.Fatalf("got %.200v", err)
	}
	dir := t.TempDir()
	env := filepath.Join(dir, "a.env")
	must(t, os.WriteFile(env, []byte("BIG="+strings.Repeat("x", 60<<10)+"\n"), 0o644))
	b.Reset()
	fmt.Fprintf(&b, "[defaults]\nenv_file = %q\n", env)
	for i := range 300 {
		fmt.Fprintf(&b, "[program.p%d]\ncommand = 'x'\n", i)
	}
	_, err = Parse(filepath.Join(dir, "e.toml"), []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "e.toml:2: defaults.env_file: makes the environments of all programs (times their instances) larger than 16777216 bytes together") {
		t.Fatalf("got %.300v", err)
	}
}
