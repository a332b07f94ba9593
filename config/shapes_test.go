package config

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// worstShapes are the shapes of file the TOML decoder and the loader
// handle worst, each as large as the bounds let it be (or at 1 MiB).
func worstShapes(dir string) map[string]func() string {
	gen := func(head string, f func(b *strings.Builder, i int) bool, tail string) func() string {
		return func() string { return genShape(head, f, tail) }
	}
	path8 := "p" + strings.Repeat(".a", maxKeyParts-1)
	env := filepath.Join(dir, "big.env")
	return map[string]func() string{
		"programs by dotted keys": gen("", func(b *strings.Builder, i int) bool {
			fmt.Fprintf(b, "program.p%d.command='x'\n", i)
			return i < maxPrograms-1
		}, ""),
		"programs by headers": gen("", func(b *strings.Builder, i int) bool {
			fmt.Fprintf(b, "[program.p%d]\ncommand='x'\n", i)
			return i < maxPrograms-1
		}, ""),
		"keys in one env table": gen("[program.a]\ncommand='x'\n[program.a.env]\n", func(b *strings.Builder, i int) bool {
			fmt.Fprintf(b, "K%d=1\n", i)
			return i < maxValues-10
		}, ""),
		"unknown keys": gen("", func(b *strings.Builder, i int) bool {
			fmt.Fprintf(b, "k%d=1\n", i)
			return i < maxValues-10
		}, ""),
		"long command array": gen("[program.a]\ncommand=[", func(b *strings.Builder, i int) bool {
			b.WriteString("'x',")
			return i < maxValues-10
		}, "'x']\n"),
		"array of inline tables": gen("a=[", func(b *strings.Builder, i int) bool {
			b.WriteString("{},") // a table and an element
			return i < maxValues/2-10
		}, "{}]\n"),
		"arrays of tables": gen("", func(b *strings.Builder, i int) bool {
			b.WriteString("[[x]]\n")
			return i < maxTables-1
		}, ""),
		"keys of 8 parts": gen("", func(b *strings.Builder, i int) bool {
			fmt.Fprintf(b, "%s%d=1\n", path8, i)
			return i < maxValues/maxKeyParts-10
		}, ""),
		"headers of 8 parts": gen("", func(b *strings.Builder, i int) bool {
			fmt.Fprintf(b, "[%s%d]\n", path8, i)
			return i < maxValues/(maxKeyParts-1)-10
		}, ""),
		"nested inline tables with dotted keys": gen("", func(b *strings.Builder, i int) bool {
			fmt.Fprintf(b, "x%d = %s1%s\n", i, strings.Repeat("{a = ", maxKeyParts-1), strings.Repeat("}", maxKeyParts-1))
			return i < maxValues/(2*maxKeyParts-1)-10 // 7 tables and 8 keys a line
		}, ""),
		"defaults applied to many programs":         defaultsShape(18, maxDefaultsApplied/20-1, "D%d='1'\n", "[defaults.env]\n"),
		"big defaults applied to some programs":     defaultsShape(1998, maxDefaultsApplied/2000-1, "D%d='1'\n", "[defaults.env]\n"),
		"unknown defaults applied to some programs": defaultsShape(1999, maxDefaultsApplied/2000-1, "d%d=1\n", "[defaults]\n"),
		"one big env_file for many programs": gen("[defaults]\nenv_file='"+env+"'\n", func(b *strings.Builder, i int) bool {
			fmt.Fprintf(b, "[program.p%d]\ncommand='x'\n", i)
			return i < maxPrograms-1
		}, ""),
		"strings with escapes": gen("[program.a]\ncommand='x'\nenv.A=\"", func(b *strings.Builder, i int) bool {
			b.WriteString(`\u0041`)
			return true
		}, "\"\n"),
	}
}

// Every shape of at most 1 MiB is accepted or refused within 100 MiB: each
// is parsed in a child process (this test binary) whose peak RSS is read
// from /proc. The time (wall and CPU) is logged, never asserted: the
// machine may be slow or busy.
func TestWorstShapesStayBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("parses 1 MiB files")
	}
	dir := t.TempDir()
	var env strings.Builder
	for i := range maxLines {
		fmt.Fprintf(&env, "E%d=%s\n", i, strings.Repeat("e", maxFileSize/maxLines-10))
	}
	must(t, os.WriteFile(filepath.Join(dir, "big.env"), []byte(env.String()), 0o644))
	for _, name := range slices.Sorted(maps.Keys(worstShapes(dir))) {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestWorstShapeChild$", "-test.v")
			cmd.Env = append(os.Environ(), "SHAPE_DIR="+dir, "SHAPE="+name)
			out, err := cmd.CombinedOutput()
			m := regexp.MustCompile(`shape: (\d+) B, (\d+) ms, peak RSS (\d+) kB, (.*)`).FindStringSubmatch(string(out))
			if err != nil || m == nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			size, _ := strconv.Atoi(m[1])
			peak, _ := strconv.Atoi(m[3])
			t.Logf("%-42s %7d B %6s ms  peak RSS %5.1f MiB  %s", name, size, m[2], float64(peak)/1024, m[4])
			if size > maxFileSize {
				t.Errorf("the shape is %d bytes", size)
			}
			if peak > 100<<10 && !raceEnabled { // the race detector's shadow memory triples it
				t.Errorf("peak RSS %d MiB", peak>>10)
			}
		})
	}
}

// TestWorstShapeChild parses one of worstShapes for the test above.
func TestWorstShapeChild(t *testing.T) {
	name, dir := os.Getenv("SHAPE"), os.Getenv("SHAPE_DIR")
	if name == "" {
		t.Skip("run by TestWorstShapesStayBounded")
	}
	src := worstShapes(dir)[name]()
	start := time.Now()
	_, err := Parse(filepath.Join(dir, "s.toml"), []byte(src))
	el := time.Since(start)
	status, _ := os.ReadFile("/proc/self/status")
	peak := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status)
	if peak == nil {
		t.Fatalf("no VmHWM in /proc/self/status")
	}
	verdict := "accepted"
	if err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		verdict = "refused: " + first[strings.LastIndex(first, "s.toml")+6:]
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	fmt.Printf("shape: %d B, %d ms, peak RSS %s kB, %s (the whole process: %d ms of CPU)\n", len(src), el.Milliseconds(), peak[1], verdict, cpu.Milliseconds())
}

// defaultsShape is a [defaults] table (head) of n values written by format,
// and programs programs it applies to.
func defaultsShape(n, programs int, format, head string) func() string {
	return func() string {
		return genShape(head, func(b *strings.Builder, i int) bool {
			if i < n {
				fmt.Fprintf(b, format, i)
				return true
			}
			fmt.Fprintf(b, "[program.p%d]\ncommand='x'\n", i)
			return i < n+programs-1
		}, "")
	}
}

// genShape writes head, then f's lines while f says so and the file stays
// under maxFileSize, then tail.
func genShape(head string, f func(b *strings.Builder, i int) bool, tail string) string {
	var b strings.Builder
	b.WriteString(head)
	for i := 0; b.Len() < maxFileSize-len(tail)-200 && f(&b, i); i++ {
	}
	b.WriteString(tail)
	return b.String()
}
