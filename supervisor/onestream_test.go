package supervisor

import (
	"io"
	"log/slog"
	"testing"

	"github.com/supervise-dev/supervise/config"
)

// OneStream gives one pipe to a program whose streams both go only to the
// console; one with a log file, or any program without OneStream, keeps two.
func TestOneStreamPipes(t *testing.T) {
	console := config.Output{Console: true}
	file := config.Output{Console: true, File: t.TempDir() + "/err.log"}
	for _, c := range []struct {
		one            bool
		stdout, stderr config.Output
		merged         bool
	}{
		{true, console, console, true},
		{true, console, file, false},
		{true, config.Output{}, console, false},
		{false, console, console, false},
	} {
		l := newLogSet(io.Discard, false, false, false, slog.New(slog.DiscardHandler), nil)
		l.oneStream = c.one
		il := l.forKey(&config.Program{Name: "p", Stdout: c.stdout, Stderr: c.stderr}, "p")
		out, errf, err := il.pipes()
		if err != nil {
			t.Fatal(err)
		}
		if merged := out == errf; merged != c.merged {
			t.Errorf("OneStream %v, stdout %+v, stderr %+v: one pipe %v, want %v", c.one, c.stdout, c.stderr, merged, c.merged)
		}
		out.Close()
		if errf != out {
			errf.Close()
		}
		l.close()
	}
}
