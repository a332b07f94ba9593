package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A SIGTERM that comes while pre_start runs cancels the rest of the start:
// the program itself never runs.
func TestSIGTERMDuringPreStartCancelsTheStart(t *testing.T) {
	dir, file := writeConfig(t, `
[program.db]
command = ["sh", "-c", "touch program-ran; exec sleep 1000"]
[program.db.hooks.pre_start]
command = ["sh", "-c", "touch pre-start-running; until [ -f pre-start-go ]; do sleep 0.05; done"]
timeout = "60s"
`)
	d := startDaemon(t, dir, file)
	eventually(t, "pre_start running", 60*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dir, "pre-start-running"))
		return err == nil
	})
	d.signal(15)
	// The shutdown has begun (it waits for the start sequence); now the
	// hook may finish.
	eventually(t, "the shutdown to begin", 60*time.Second, func() bool {
		return strings.Contains(d.stderr.String(), "shutting down")
	})
	must(t, writeFileNow(filepath.Join(dir, "pre-start-go")))
	if code := d.wait(60 * time.Second); code != 0 {
		t.Errorf("supervise exit %d", code)
	}
	// The program may not even get to run its first command before the
	// stop kills it: supervise's own log says whether it was started.
	if _, err := os.Stat(filepath.Join(dir, "program-ran")); err == nil || strings.Contains(d.stderr.String(), "msg=started program=db") {
		t.Fatal("the program was started although SIGTERM came during its pre_start")
	}
}
