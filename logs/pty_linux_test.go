package logs

import (
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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

// PtySize: the console's terminal less the prefix (and the time with
// Timestamps), never under minPtyCols unless the terminal itself is; no
// size off a terminal or on one of size 0x0.
func TestConsolePtySize(t *testing.T) {
	m, s, err := openPty(nil)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	defer m.Close()
	defer s.Close()
	plain := NewConsole(s, ConsoleConfig{Names: []string{"web", "worker"}})
	stamped := NewConsole(s, ConsoleConfig{Names: []string{"web"}, Timestamps: true})
	if _, ok := plain.PtySize(); ok {
		t.Error("a size for a terminal of size 0x0")
	}
	if _, ok := NewConsole(&writes{}, ConsoleConfig{}).PtySize(); ok {
		t.Error("a size for a console off a terminal")
	}
	for _, tc := range []struct {
		c          *Console
		cols, want uint16
	}{
		{plain, 80, 80 - uint16(len("worker | "))},
		{stamped, 80, 80 - uint16(len("15:04:05 web | "))},
		{plain, 25, minPtyCols},
		{plain, 12, 12},
	} {
		if _, _, err := resizePty(m, WinSize{Rows: 24, Cols: tc.cols}); err != nil {
			t.Fatal(err)
		}
		ws, ok := tc.c.PtySize()
		if !ok || ws != (WinSize{Rows: 24, Cols: tc.want}) {
			t.Errorf("at 24x%d: PtySize = %v, %v; want 24x%d", tc.cols, ws, ok, tc.want)
		}
	}
	// A name added later widens the prefix.
	plain.Add("a-much-longer-name")
	if _, _, err := resizePty(m, WinSize{Rows: 24, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	if ws, _ := plain.PtySize(); ws.Cols != 100-uint16(len("a-much-longer-name | ")) {
		t.Errorf("after a longer name: %d columns", ws.Cols)
	}
}

// Resize sets the size of the program's terminal and asks for a signal
// only when it changed and no foreground group heard of it; a pipe is
// left alone.
func TestProgramResize(t *testing.T) {
	p, err := NewProgram(ProgramConfig{Name: "web", Stdout: Output{Console: true}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.NewPty(Stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, err := p.NewPipe(Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !p.Resize(WinSize{Rows: 33, Cols: 77}) {
		t.Error("no signal asked for a changed size")
	}
	got, err := unix.IoctlGetWinsize(int(s.Fd()), unix.TIOCGWINSZ)
	if err != nil || got.Row != 33 || got.Col != 77 {
		t.Errorf("the program's terminal is %v (%v), want 33x77", got, err)
	}
	if p.Resize(WinSize{Rows: 33, Cols: 77}) {
		t.Error("a signal asked for an unchanged size")
	}
	s.Close()
	w.Close()
	closeProgram(t, p)
}
