package export

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/supervise-dev/supervise/config"
)

// FuzzImportProcessCompose holds the importer to what supervise's loader
// will take: whatever the YAML, the import is an error, or a
// supervise.toml that loads or is refused by the loader with its own
// error list (never a panic), within the config bounds, made in well
// under a second and 100 MiB.
func FuzzImportProcessCompose(f *testing.F) {
	seeds, err := filepath.Glob("testdata/process-compose/*.y*ml")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seed files: %v", err)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"processes:\n  p:\n    command: echo $A ${B:-x} $$C {{.V}} {{ \"{{x}}\" }}\n    vars: {V: 1}\n",
		"x: &a {command: a, environment: [A=$B]}\nprocesses: {p: {<<: *a, replicas: 2}, q: {<<: [*a, *a], depends_on: {p: process_healthy}}}\n",
		"processes:\n  p:\n    entrypoint: [a, $X]\n    readiness_probe: {http_get: {host: '::1', port: 80, headers: {A: [b, c]}}}\n    liveness_probe: {exec: {command: x}, success_threshold: 2}\n",
		"processes:\n  \"a:b\": {command: x, shutdown: {command: y, signal: 9, timeout_seconds: 1}}\n  a-b: {command: z, log_location: l, log_configuration: {rotation: {max_size_mb: 1}}}\n",
		"environment: [A=${B-c}, D=${E:=f}]\nprocesses: {p: {command: a, availability: {restart: always, backoff_seconds: 0, exit_on_end: true}}}\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		out := boundedImport(t, data, func() ([]byte, error) {
			out, _, err := ImportProcessCompose("fuzz.yaml", data, ProcessComposeOptions{Lookup: noLookup})
			return out, err
		})
		if out == nil {
			return
		}
		// refused or not, the loader must answer with its own errors
		_, err := config.Parse(filepath.Join(dir, "supervise.toml"), out)
		if err != nil {
			if _, ok := err.(config.ErrorList); !ok {
				t.Fatalf("the import is refused with %T %v:\n%s", err, err, out)
			}
		}
	})
}
