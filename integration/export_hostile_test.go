package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `supervise export systemd` on a config whose log file path holds a
// line break: no unit is written (systemd would read the rest of the path
// as a directive of its own), stderr names the program and the key, and
// no value starts a line of stderr.
func TestExportSystemdRefusesLineBreakInPath(t *testing.T) {
	dir, file := writeConfig(t, `
[program.web]
command = ["/bin/sleep", "1"]
user = "daemon"
stdout = { file = "/tmp/web.log\nFORGED ExecStartPre=+/bin/sh -c id" }
`)
	out := filepath.Join(dir, "units")
	cmd := exec.Command(binary, "export", "systemd", "-c", file, "-o", out, "--prefix", "app")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); !ok {
		t.Errorf("export: %v, want a failure\n%s", err, stderr.String())
	}
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(l, "FORGED") {
			t.Errorf("a value starts a line of stderr: %q", l)
		}
	}
	if !strings.Contains(stderr.String(), `warning: program web: stdout.file: "/tmp/web.log\nFORGED`) {
		t.Errorf("no warning naming the program, the key and the quoted value:\n%s", stderr.String())
	}
	if units, _ := os.ReadDir(out); len(units) > 0 {
		data, _ := os.ReadFile(filepath.Join(out, "app-web.service"))
		t.Errorf("%d files written:\n%s", len(units), data)
	}
}
