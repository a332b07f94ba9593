package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestHumanHandler(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(newHumanHandler(&b, []string{"web", "worker"}, false))
	log.Info("state", "program", "web", "from", "Stopped", "to", "Starting") // not said
	log.Info("started", "program", "web", "pid", 42)
	log.Info("exited", "program", "worker", "exit_code", 3, "signal", "", "reason", "Error")
	log.Info("exited", "program", "web", "exit_code", -1, "signal", "KILL", "reason", "OOMKilled")
	log.Info("state", "program", "web", "from", "Exited", "to", "CrashLoopBackOff", "msg", "back-off 10s")
	log.Warn("probe could not run; not counted", "program", "web", "probe", "readiness", "msg", "x\x1b]0;pwned\x07y")
	log.Info("files changed; restarting", "program", "web", "file", "/srv/app/\x1b[2Japp.py")
	want := "web    | started (pid 42)\n" +
		"worker | exited with code 3\n" +
		"web    | killed by signal KILL (OOMKilled)\n" +
		"web    | restarting after a 10s back-off (CrashLoopBackOff)\n"
	got := b.String()
	if !strings.HasPrefix(got, want) {
		t.Fatalf("got:\n%s\nwant it to start with:\n%s", got, want)
	}
	if strings.ContainsRune(got, 0x1b) || strings.ContainsRune(got, 0x07) {
		t.Errorf("control bytes reached the console:\n%q", got)
	}
	if !strings.Contains(got, `web    | warn: probe could not run; not counted (probe=readiness msg=x\x1b]0;pwned\x07y)`) {
		t.Errorf("the warning is not there, escaped:\n%s", got)
	}
}

// An upgrade in place is said on both sides of the exec, and the new
// binary does not greet as a new start.
func TestHumanHandlerUpgrade(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(newHumanHandler(&b, []string{"web"}, false))
	log.Info("upgrading: executing the new binary", "path", "/usr/bin/supervise", "from", "v1", "to", "v2", "generation", 1)
	log.Info("upgraded in place", "from", "v1", "to", "v2", "pid", 7)
	log.Info("supervise running", "config", "Procfile", "programs", 1, "after_upgrade", true)
	want := "supervise | upgrading in place: executing the new binary /usr/bin/supervise\n" +
		"supervise | upgraded in place from v1 to v2 (pid 7); every program kept\n"
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
