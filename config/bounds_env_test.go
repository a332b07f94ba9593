package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// envBomb is a .env whose every line doubles the one before: n lines hold
// 16<<(n-1) bytes once expanded.
func envBomb(n int) string {
	var b strings.Builder
	b.WriteString("A0=xxxxxxxxxxxxxxxx\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "A%d=${A%d}${A%d}\n", i, i-1, i-1)
	}
	return b.String()
}

// allocated runs fn and returns the bytes it allocated (all of them, not
// only what stays live: an upper bound on its peak).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// oneError asserts err is an ErrorList whose first problem is at file:line,
// names key and says msg.
func oneError(t *testing.T, err error, file string, line int, key, msg string) {
	t.Helper()
	var list ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("got %v, want an ErrorList", err)
	}
	e := list[0]
	if e.File != file || e.Line != line || e.Key != key || !strings.Contains(e.Msg, msg) {
		t.Fatalf("got %q, want %s:%d: %s: …%s…", e.Error(), file, line, key, msg)
	}
}

// A value may expand to at most maxValueSize bytes: the 14th doubling
// (128 KiB) is the last one allowed, the 15th is refused where it is
// written, and refusing it costs no more than the bound.
func TestEnvExpansionBombIsRefused(t *testing.T) {
	src := envBomb(22) // 64 MiB once expanded
	var err error
	n := allocated(func() { _, err = parseEnv("app.env", src, nil) })
	oneError(t, err, "app.env", 15, "A14", "longer than 131072 bytes")
	if n > 16<<20 {
		t.Errorf("refusing the bomb allocated %d MiB", n>>20)
	}
	if _, err := parseEnv("app.env", envBomb(14), nil); err != nil {
		t.Errorf("a 128 KiB value refused: %v", err)
	}
}

// The same bound holds in double quotes and through defaults, and for the
// TOML env table (expanded from the supervisor's environment).
func TestEnvExpansionBoundEverywhere(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	outer := func(name string) (string, bool) { return big, name == "BIG" }
	for _, src := range []string{
		`A="${BIG}${BIG}"`,
		`A=${NOPE:-${BIG}}${BIG}`,
		`A=$BIG$BIG`,
	} {
		_, err := parseEnv("e.env", src+"\n", outer)
		oneError(t, err, "e.env", 1, "A", "longer than")
	}
	if _, err := expandEnv("${BIG}${BIG}", outer); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("TOML env: got %v", err)
	}
}

// The whole environment of one .env set is bounded too: many values each
// under the per-value bound add up to at most maxEnvSize.
func TestEnvTotalIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("X=" + strings.Repeat("x", 60<<10) + "\n")
	for i := range 20 {
		fmt.Fprintf(&b, "B%d=${X}${X}\n", i)
	}
	_, err := parseEnv("t.env", b.String(), nil)
	oneError(t, err, "t.env", 10, "B8", "environment larger than 1048576 bytes")
}

// A program's environment (env_file entries and env together) is bounded
// as a whole, named at the key that crosses it.
func TestProgramEnvIsBounded(t *testing.T) {
	dir := t.TempDir()
	half := "V=" + strings.Repeat("v", 60<<10) + "\n"
	for i := range 20 {
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.env", i)), []byte(strings.Replace(half, "V=", fmt.Sprintf("V%d=", i), 1)), 0o644))
	}
	var files []string
	for i := range 20 {
		files = append(files, fmt.Sprintf("%q", fmt.Sprintf("%d.env", i)))
	}
	file := filepath.Join(dir, "s.toml")
	src := "[program.a]\ncommand = \"x\"\nenv_file = [" + strings.Join(files, ", ") + "]\n"
	_, err := Parse(file, []byte(src))
	if err == nil || !strings.Contains(err.Error(), file+":3: program.a.env_file") || !strings.Contains(err.Error(), "environment larger than 1048576 bytes") {
		t.Fatalf("got %v", err)
	}
}

// A NUL byte cannot be passed to a program: the value is refused where it
// is written, not when the program starts.
func TestEnvNULIsRefused(t *testing.T) {
	for _, src := range []string{"A=1\nB=x\x00y\n", "A=1\nB=\"x\x00y\"\n", "A=1\nB='x\x00y'\n"} {
		_, err := parseEnv("n.env", src, nil)
		oneError(t, err, "n.env", 2, "B", "NUL")
	}
}

// Nested defaults and the other forms of docker compose's interpolation.
func TestEnvComposeForms(t *testing.T) {
	outer := func(name string) (string, bool) {
		v, ok := map[string]string{"SET": "set", "EMPTY": ""}[name]
		return v, ok
	}
	src := `N1=${UNSET:-${ALSO_UNSET:-z}}
N2=${UNSET:-${SET}}
N3=${SET:-${UNSET:-z}}
N4=${UNSET:-a${SET}b}
N5="${UNSET:-x y}"
D1=${EMPTY-dash}
D2=${UNSET-dash}
D3=${EMPTY:-colon}
P1=${SET:+plus}
P2=${EMPTY:+plus}
P3=${EMPTY+plus}
P4=${UNSET+plus}
P5=${SET:+${SET}!}
Q1=${SET:?must be set}
Q2=${UNSET:-}
L1=${UNSET:-$$}
L2=${UNSET:-a}b}
L3=${SET}${UNSET-${UNSET:-${SET}}}
`
	got, err := parseEnv(".env", src, outer)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"N1": "z", "N2": "set", "N3": "set", "N4": "asetb", "N5": "x y",
		"D1": "", "D2": "dash", "D3": "colon",
		"P1": "plus", "P2": "", "P3": "plus", "P4": "", "P5": "set!",
		"Q1": "set", "Q2": "", "L1": "$", "L2": "ab}", "L3": "setset",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	for line, c := range []struct{ src, msg string }{
		{"R=${UNSET:?is required}", "UNSET: is required"},
		{"R=${EMPTY:?}", "EMPTY: required"},
		{"R=${UNSET?must be set}", "UNSET: must be set"},
	} {
		_, err := parseEnv("r.env", c.src+"\n", outer)
		oneError(t, err, "r.env", 1, "R", c.msg)
		_ = line
	}
	if v, err := expandEnv("${UNSET:-${SET}}/${UNSET-${EMPTY:-d}}", outer); err != nil || v != "set/d" {
		t.Errorf("TOML env nested: %q, %v", v, err)
	}
	if _, err := expandEnv("${UNSET:?need it}", outer); err == nil || !strings.Contains(err.Error(), "UNSET: need it") {
		t.Errorf("TOML env :?: got %v", err)
	}
}

// References nest at most maxRefDepth deep.
func TestEnvReferenceDepthIsBounded(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("${U:-", n) + "x" + strings.Repeat("}", n) }
	got, err := parseEnv("d.env", "A="+deep(maxRefDepth)+"\n", nil)
	if err != nil || got["A"] != "x" {
		t.Fatalf("depth %d: %v %v", maxRefDepth, got, err)
	}
	_, err = parseEnv("d.env", "A=1\nA="+deep(maxRefDepth+1)+"\n", nil)
	oneError(t, err, "d.env", 2, "A", "nested more than")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
