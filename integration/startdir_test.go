package integration

import (
	"strings"
	"testing"
	"time"
)

// A program whose working directory is missing fails to start with that
// said, not with its command reported as not found.
func TestMissingWorkingDirectoryIsSaid(t *testing.T) {
	dir, file := writeConfig(t, `
[program.a]
command = ["sleep", "100"]
dir = "/nonexistent/supervise-test-dir"
restart = "never"
[program.keep]
command = ["sleep", "100"]
`)
	d := startDaemon(t, dir, file)
	eventually(t, "a to fail", 60*time.Second, func() bool {
		return d.status()["a"].State == "Failed"
	})
	var msg string
	for _, ev := range d.events() {
		if ev.Program == "a" && strings.Contains(ev.Message, "StartError") {
			msg = ev.Message
		}
	}
	if !strings.Contains(msg, "working directory /nonexistent/supervise-test-dir does not exist") {
		t.Errorf("a's start error says %q, want the missing working directory named", msg)
	}
	d.signal(15)
	d.wait(60 * time.Second)
}
