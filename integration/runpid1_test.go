package integration

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `supervise run` as PID 1 of a new pid namespace with exit_on: when that
// program ends, the others stop in reverse dependency order and the
// supervisor exits with the program's code. The orphans of the programs
// are reaped meanwhile.
func TestRunAsPID1ExitOn(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	dir, file := writeConfig(t, `
[supervisor]
exit_on = ["main"]
[program.db]
command = ["sh", "-c", "trap 'echo stop db >> order; exit 0' TERM; while :; do sleep 0.05; done"]
[program.api]
command = ["sh", "-c", "trap 'echo stop api >> order; exit 0' TERM; while :; do sleep 0.05; done"]
depends_on = ["db"]
[program.main]
# Leaves orphans behind (reaped by the supervisor as PID 1), then exits 5.
command = ["sh", "-c", "for i in 1 2 3 4 5; do (sleep 0.1 &) ; done; echo $$ > main.pid; until [ -f go ]; do sleep 0.05; done; exit 5"]
restart = "never"
depends_on = ["api"]
`)
	cmd := exec.Command("unshare", "--pid", "--fork", "--kill-child", "--mount-proc", binary, "run", "-c", file, "--socket", filepath.Join(dir, "s.sock"))
	cmd.Dir = dir
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second // a stray child holding stderr must not hang Wait
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var err error
	done := make(chan struct{})
	go func() { err = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("stderr:\n%s", tail(stderr.String(), 40))
		}
	})
	eventually(t, "main running", 30*time.Second, func() bool { return len(readLines(t, filepath.Join(dir, "main.pid"))) > 0 })
	if err := writeFileNow(filepath.Join(dir, "go")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("supervise did not exit after the exit_on program ended")
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 5 {
		t.Fatalf("exit %v, want code 5", err)
	}
	if got := strings.Join(readLines(t, filepath.Join(dir, "order")), ", "); got != "stop api, stop db" {
		t.Errorf("stop order %q, want api before db", got)
	}
	if !strings.Contains(stderr.String(), "exit_on program ended") {
		t.Error("no log of the exit_on decision")
	}
}
