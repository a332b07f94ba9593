package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// FuzzLoad drives the whole loader the way check, run and a reload do: a
// TOML file, or a Procfile with a .env beside it, read from disk. Whatever
// the bytes, Load returns a config or an ErrorList naming the file; when
// fuzzing (not when the seeds run as a unit test, where the machine's speed
// must not matter), one input may take at most 1 s and allocate at most
// 100 MiB.
func FuzzLoad(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("..", "config.example.toml")); err == nil {
		f.Add(false, string(data), "")
	}
	f.Add(false, "a = "+strings.Repeat("[", 33)+strings.Repeat("]", 33)+"\n", "")
	f.Add(false, "a = "+strings.Repeat("[", 300)+strings.Repeat("]", 300)+"\n", "")
	f.Add(false, "a = "+strings.Repeat("{b=", 200)+"1"+strings.Repeat("}", 200)+"\n", "")
	f.Add(false, "[program.x]\ncommand = \"x\"\nenv = "+strings.Repeat("[{a=", 16)+"1"+strings.Repeat("}]", 16)+"\n", "")
	f.Add(false, "a = \"\"\"\n"+strings.Repeat("[", 64)+"\"\"\"\n[program.x]\ncommand = 'x'\n", "")
	f.Add(false, strings.Repeat("[t]\n", 1000), "")
	f.Add(true, "web: python -m http.server $PORT\nworker: ./work --queue=default\n# c\n", "PORT=5000\nA='x'\nB=\"multi\nline\"\n")
	// The size cases at full size live in bounds_test.go: a 64 KiB seed
	// makes every mutation and minimisation slow without finding more.
	f.Add(true, strings.Repeat("\n", 10_001)+"web: x\n", strings.Repeat("A=1\n", 300))
	fuzzing := flag.Lookup("test.fuzz").Value.String() != ""
	f.Fuzz(func(t *testing.T, procfile bool, main, env string) {
		dir := t.TempDir()
		name := "supervise.toml"
		if procfile {
			name = "Procfile"
			if env != "" {
				if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(env), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(main), 0o644); err != nil {
			t.Fatal(err)
		}
		var before runtime.MemStats
		if fuzzing {
			runtime.ReadMemStats(&before)
		}
		start := time.Now()
		cfg, err := Load(path)
		elapsed := time.Since(start)
		if fuzzing {
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100<<20 {
				t.Fatalf("allocated %d MiB for a %d-byte input", alloc>>20, len(main)+len(env))
			}
			if elapsed > time.Second {
				t.Fatalf("took %v for a %d-byte input", elapsed, len(main)+len(env))
			}
		}
		if err == nil {
			checkValid(t, cfg)
			return
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 || cfg != nil {
			t.Fatalf("not a non-empty ErrorList: %T %v", err, err)
		}
		for _, e := range list {
			if e.File == "" || e.Msg == "" || strings.ContainsAny(e.Error(), "\n\r") {
				t.Fatalf("bad error %#v", e)
			}
		}
	})
}
