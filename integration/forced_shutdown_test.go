package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A shutdown that has to SIGKILL a program says so at the end, naming it,
// and with strict_shutdown exits 124; without, it exits 0 all the same.
func TestForcedShutdownIsReported(t *testing.T) {
	for _, strict := range []bool{true, false} {
		name := map[bool]string{true: "strict", false: "lenient"}[strict]
		t.Run(name, func(t *testing.T) {
			dir, file := writeConfig(t, `
[supervisor]
strict_shutdown = `+map[bool]string{true: "true", false: "false"}[strict]+`
[program.stubborn]
command = ["sh", "-c", "trap '' TERM; touch trapped; while :; do sleep 0.1; done"]
stop_timeout = "1s"
[program.polite]
command = ["sleep", "1000"]
`)
			d := startDaemon(t, dir, file)
			d.running("stubborn", "polite")
			// Running comes at the exec; the shell ignores TERM only once
			// it has run the trap.
			eventually(t, "stubborn ignoring TERM", 30*time.Second, func() bool {
				_, err := os.Stat(filepath.Join(dir, "trapped"))
				return err == nil
			})
			d.signal(15)
			code := d.wait(60 * time.Second)
			want := 0
			if strict {
				want = 124
			}
			if code != want {
				t.Errorf("exit %d, want %d", code, want)
			}
			log := d.stderr.String()
			if !strings.Contains(log, "shutdown forced: SIGKILL for 1 program(s) that did not stop in time: stubborn") {
				t.Errorf("no summary of the forced shutdown naming stubborn (and only it); log:\n%s", tail(log, 20))
			}
		})
	}
}
