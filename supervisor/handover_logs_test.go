package supervisor

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/supervise-dev/supervise/config"
)

// A router replaced by new output settings hands its running pipe on:
// through several replacements in a row, the writer never finds the pipe
// closed, every line reaches the ring once, in order, and once the
// hand-overs are done the lines go to the last settings' file.
func TestReplacedRouterHandsItsPipeOn(t *testing.T) {
	l := newLogSet(io.Discard, false, false, false, slog.New(slog.DiscardHandler), nil)
	dir := t.TempDir()
	spec := func(i int) *config.Program {
		return &config.Program{Name: "p", Stdout: config.Output{File: fmt.Sprintf("%s/%d.log", dir, i), MaxFiles: 1}, Stderr: config.Output{Console: true}}
	}
	first := l.forKey(spec(0), "p")
	out, errf, err := first.pipes()
	if err != nil {
		t.Fatal(err)
	}
	errf.Close()
	n := 0
	write := func() {
		n++
		if _, err := fmt.Fprintf(out, "line %d\n", n); err != nil {
			t.Fatalf("writing line %d: %v", n, err)
		}
	}
	var last *instLogs
	for i := 1; i <= 5; i++ {
		write()
		last = l.forKey(spec(i), "p") // back to back: the hand-overs chain
		write()
	}
	// Every hand-over done, the pipe is last's.
	<-last.adopted
	write()
	out.Close()
	l.close() // drains the pipe to its end
	if b, err := os.ReadFile(dir + "/5.log"); err != nil || !strings.HasSuffix(string(b), fmt.Sprintf("line %d\n", n)) {
		t.Fatalf("5.log, the last settings' file, is %q (%v), want it to end with line %d", b, err, n)
	}
	lines := last.ring.Last(-1)
	if len(lines) != n {
		t.Fatalf("the ring holds %d lines, want %d", len(lines), n)
	}
	for i, ln := range lines {
		if want := fmt.Sprintf("line %d", i+1); ln.Text != want {
			t.Fatalf("ring line %d is %q, want %q", i+1, ln.Text, want)
		}
	}
}
