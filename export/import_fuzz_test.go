package export

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// boundedImport runs an importer on data as both fuzz targets require: in
// under a second and 100 MiB, and when it succeeds, a supervise.toml within
// the config bounds that parses as TOML. It returns that output, or nil
// when the importer refused the input.
func boundedImport(t *testing.T, data []byte, importer func() ([]byte, error)) []byte {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	out, err := importer()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if took > time.Second {
		t.Errorf("the import of %d bytes took %v", len(data), took)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100<<20 {
		t.Errorf("the import of %d bytes allocated %d MiB", len(data), alloc>>20)
	}
	if err != nil {
		return nil
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
	return out
}
