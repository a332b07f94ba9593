package logs

import (
	"os/exec"
	"strings"
	"testing"
)

// NewPty: the program sees a terminal on stdout and stderr, its lines come
// in the order written, without "\r", and the pump ends when it exits.
func TestProgramPty(t *testing.T) {
	var out writes
	console := NewConsole(&out, ConsoleConfig{})
	p, err := NewProgram(ProgramConfig{Name: "web", Console: console, Stdout: Output{Console: true}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.NewPty(Stdout)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `[ -t 1 ] && [ -t 2 ] && echo tty; echo one; echo two >&2; echo three`)
	cmd.Stdout, cmd.Stderr = s, s
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	closeProgram(t, p)
	if got, want := out.String(), "web | tty\nweb | one\nweb | two\nweb | three\n"; got != want {
		t.Errorf("console = %q, want %q", got, want)
	}
	if strings.Contains(out.String(), "\r") {
		t.Error("a carriage return came through")
	}
}
