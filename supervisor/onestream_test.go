package supervisor

import (
	"io"
	"log/slog"
	"testing"

	"github.com/supervise-dev/supervise/config"
)

// OneStream gives one pipe to a program whose streams both go only to the
// console; one with a log file, or any program without OneStream, keeps two.
// stderr = "stdout" gives one pipe whatever the outputs and the runner.
func TestOneStreamPipes(t *testing.T) {
	console := config.Output{Console: true}
	file := config.Output{Console: true, File: t.TempDir() + "/err.log"}
	for _, c := range []struct {
		one            bool
		stdout, stderr config.Output
		toStdout       bool
		merged         bool
	}{
		{true, console, console, false, true},
		{true, console, file, false, false},
		{true, config.Output{}, console, false, false},
		{false, console, console, false, false},
		{false, console, config.Output{}, true, true},
		{false, file, config.Output{}, true, true},
		{true, file, config.Output{}, true, true},
	} {
		l := newLogSet(io.Discard, false, false, false, slog.New(slog.DiscardHandler), nil)
		l.oneStream = c.one
		il := l.forKey(&config.Program{Name: "p", Stdout: c.stdout, Stderr: c.stderr, StderrToStdout: c.toStdout}, "p")
		out, errf, err := il.pipes()
		if err != nil {
			t.Fatal(err)
		}
		if merged := out == errf; merged != c.merged {
			t.Errorf("OneStream %v, stdout %+v, stderr %+v, to stdout %v: one pipe %v, want %v", c.one, c.stdout, c.stderr, c.toStdout, merged, c.merged)
		}
		out.Close()
		if errf != out {
			errf.Close()
		}
		l.close()
	}
}
