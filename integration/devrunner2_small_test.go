package integration

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PS names each process as foreman does: web.1, web.2, worker.1.
func TestDevRunnerPS(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"Procfile": "web: echo ps=$PS\nworker: echo ps=$PS\n"})
	out, code := runDev(t, dir, append(devEnv(t.TempDir()), "NO_COLOR=1"), "--keep-running", "-m", "web=2")
	for _, want := range []string{"ps=web.1", "ps=web.2", "ps=worker.1"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d; the console lacks %q:\n%s", code, want, out)
		}
	}
}

// On a terminal the prefixes are coloured, but not for TERM=dumb or
// with NO_COLOR.
func TestDevRunnerColourOnTerminal(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"Procfile": "web: echo hello\n"})
	for _, c := range []struct {
		env    string
		colour bool
	}{{"TERM=xterm-256color", true}, {"TERM=dumb", false}, {"NO_COLOR=1", false}} {
		master, slave := openPty(t)
		cmd := exec.Command(binary)
		cmd.Dir = dir
		cmd.Env = append(devEnv(t.TempDir()), "TERM=xterm", "NO_COLOR=", c.env)
		cmd.Stdout, cmd.Stderr = slave, slave
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		var out bytes.Buffer
		read := make(chan struct{})
		go func() { io.Copy(&out, master); close(read) }() // ends with EIO once the last writer is gone
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Signal(syscall.SIGKILL)
			t.Fatalf("%s: supervise did not exit", c.env)
		}
		<-read
		text := out.String()
		if !strings.Contains(text, "hello") {
			t.Fatalf("%s: no program output:\n%q", c.env, text)
		}
		if got := strings.Contains(text, "\x1b["); got != c.colour {
			t.Errorf("%s: colour %v, want %v:\n%q", c.env, got, c.colour, text)
		}
	}
}

// A Procfile of another name is read as one; the error of a file read in
// the wrong format says which was tried; a name given twice names both
// lines.
func TestDevRunnerProcfileNamesAndErrors(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Procfile-dev":   "web: echo dash dev\n",
		"dev.procfile":   "web: echo dot procfile\n",
		"Devfile":        "web: echo by content\n",
		"bad.toml":       "web: echo not toml\n",
		"Procfile.twice": "web: a\nworker: b\nweb: c\n",
	})
	env := append(devEnv(t.TempDir()), "NO_COLOR=1", "PORT=")
	for file, want := range map[string]string{"Procfile-dev": "dash dev", "dev.procfile": "dot procfile", "Devfile": "by content"} {
		if out, code := runDev(t, dir, env, "-f", file); code != 0 || !strings.Contains(out, "web | "+want) {
			t.Errorf("-f %s: exit %d:\n%s", file, code, out)
		}
	}
	if out, code := runDev(t, dir, env, "-f", "bad.toml"); code != 2 || !strings.Contains(out, "bad.toml:1:") || !strings.Contains(out, "read as TOML") {
		t.Errorf("-f bad.toml: exit %d; want a TOML error saying it was read as TOML:\n%s", code, out)
	}
	if out, code := runDev(t, dir, env, "-f", "Procfile.twice"); code != 2 || !strings.Contains(out, "Procfile.twice:3: web: ") || !strings.Contains(out, "Procfile.twice:1") {
		t.Errorf("a name twice: exit %d; want file:line of both:\n%s", code, out)
	}
}
