package export

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/supervise-dev/supervise/config"
)

// Real supervisord.conf files of public projects (each names its source
// at the top) import, and what they import to loads as `supervise check`
// loads it.
func TestImportSupervisordRealFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/supervisord/*.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 15 {
		t.Fatalf("%d real files, want at least 15", len(files))
	}
	// what 10to7/novnc reads from the container's environment
	t.Setenv("DISPLAY_WIDTH", "1280")
	t.Setenv("DISPLAY_HEIGHT", "720")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(src), "; Source: https://github.com/") {
				t.Errorf("the file does not name its source on its first line")
			}
			out, warns, err := ImportSupervisordFile(file)
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			toml := filepath.Join(t.TempDir(), "supervise.toml")
			if err := os.WriteFile(toml, out, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(toml)
			if err != nil {
				t.Fatalf("supervise check refuses the import: %v\n%s", err, out)
			}
			if len(cfg.Programs) == 0 {
				t.Errorf("no program imported")
			}
			for _, p := range cfg.Programs {
				for _, o := range []config.Output{p.Stdout, p.Stderr} {
					if config.IsConsolePath(o.File) {
						t.Errorf("%s logs to the file %s", p.Name, o.File)
					}
				}
			}
			for _, w := range warns {
				t.Logf("warning: %s", w)
			}
		})
	}
}
