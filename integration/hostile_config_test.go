package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nestedArrays is the file that overflowed the TOML decoder's stack: a
// fatal error no recover catches, so a supervise checking, starting or
// reloading it died (as PID 1, with its container).
func nestedArrays() string {
	const n = 500_000
	return "a = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n"
}

func TestHostileConfigIsRefusedByCheckAndRun(t *testing.T) {
	for name, src := range map[string]string{
		"nested arrays":        nestedArrays(),
		"nested inline tables": "a = " + strings.Repeat("{b=", 10_000) + "1" + strings.Repeat("}", 10_000) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir, file := writeConfig(t, src)
			out, code := runCheck(t, file)
			if code == 0 || strings.Contains(out, "fatal error") || !strings.Contains(out, file+":1: ") || !strings.Contains(out, "nested more than 32 deep") {
				t.Fatalf("check: exit %d\n%s", code, tail(out, 5))
			}
			d := startDaemon(t, dir, file)
			if code := d.wait(60e9); code == 0 {
				t.Fatal("run: exit 0 on a refused config")
			}
			if s := d.stderr.String(); !strings.Contains(s, "nested more than 32 deep") || strings.Contains(s, "fatal error") {
				t.Fatalf("run stderr:\n%s", tail(s, 5))
			}
		})
	}
}

// A hostile reload is a bad file like any other: refused, and everything
// keeps running with the config it had.
func TestHostileReloadKeepsRunning(t *testing.T) {
	dir, file := writeConfig(t, "[supervisor]\nwatch_config = false\n"+reloadBase)
	d := startDaemon(t, dir, file)
	pids := d.running("a", "b", "c")
	writeAtomic(t, file, nestedArrays())
	out, code := d.ctl("reload")
	if code == 0 || !strings.Contains(out, "nested more than 32 deep") {
		t.Fatalf("reload: exit %d\n%s", code, out)
	}
	d.samePids("after the refused reload", pids)

	big := filepath.Join(dir, "big")
	must(t, os.WriteFile(big, []byte("# "+strings.Repeat("x", 2<<20)+"\n"), 0o644))
	must(t, os.Rename(big, file))
	if out, code := d.ctl("reload"); code == 0 || !strings.Contains(out, "larger than") {
		t.Fatalf("reload of a 2 MiB file: exit %d\n%s", code, out)
	}
	d.samePids("after the refused reload of a 2 MiB file", pids)
}
