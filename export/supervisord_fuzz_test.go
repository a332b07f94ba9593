package export

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// FuzzImportSupervisord holds the importer to what supervise's loader
// will take: whatever the input, the import is an error or TOML that
// parses, within the config bounds (1 MiB, 20,000 table headers), made in
// well under a second and 100 MiB.
func FuzzImportSupervisord(f *testing.F) {
	seeds, err := filepath.Glob("testdata/supervisord*.conf")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seed configs: %v", err)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"[program:]\ncommand=x\n",
		"[program:b c/../..]\ncommand=x\n",
		"[program:a]\ncommand=sh -c 'echo $(id); `id`' \"a\\\"b\" \\; %(ENV_HOME)s %%\n",
		"[program:a]\ncommand=x\nenvironment=K=\"a\\\"b\",B='x',C=%(ENV_HOME)s,D=%(process_num)02d\nnumprocs=2\n",
		"[program:a]\ncommand=x\nnotes=a\n\tb\n\n\tc ; comment\n",
		"[DEFAULT]\nautostart=false\n[program:a]\ncommand=x\n[program:a]\nuser=nobody\n",
	} {
		f.Add([]byte(s))
	}
	f.Setenv("PHP_MEMORY", "256M") // the docker seed expands it
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		out, _, err := ImportSupervisord("fuzz.conf", data)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if took > time.Second {
			t.Errorf("the import of %d bytes took %v", len(data), took)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100<<20 {
			t.Errorf("the import of %d bytes allocated %d MiB", len(data), alloc>>20)
		}
		if err != nil {
			return
		}
		if len(out) > maxImportSize {
			t.Fatalf("the import is %d bytes, past the config bound", len(out))
		}
		if n := bytes.Count(out, []byte("\n[")); n > maxImportPrograms {
			t.Fatalf("the import has %d table headers", n)
		}
		var doc map[string]any
		if _, err := toml.Decode(string(out), &doc); err != nil {
			t.Fatalf("the import does not parse: %v\n%s", err, out)
		}
	})
}
