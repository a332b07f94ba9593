package export

import (
	"os"
	"path/filepath"
	"testing"
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
		boundedImport(t, data, func() ([]byte, error) {
			out, _, err := ImportSupervisord("fuzz.conf", data)
			return out, err
		})
	})
}
