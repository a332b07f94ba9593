package logs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// writes records every Write call.
type writes struct {
	mu    sync.Mutex
	calls []string
	fail  error
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return 0, w.fail
	}
	w.calls = append(w.calls, string(p))
	return len(p), nil
}

func (w *writes) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.calls, "")
}

func TestConsoleFormat(t *testing.T) {
	var out bytes.Buffer
	c := NewConsole(&out, ConsoleConfig{Names: []string{"web", "worker:2"}})
	c.WriteLine(Line{Program: "web", Stream: Stdout, Text: "hello"})
	c.WriteLine(Line{Program: "worker:2", Stream: Stderr, Text: "oops"})
	c.WriteLine(Line{Program: "web", Text: ""})
	if out.Len() != 0 {
		t.Errorf("wrote %q before Flush, want nothing", out.String())
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "web      | hello\nworker:2 | oops\nweb      | \n"
	if got := out.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if c.Colored() {
		t.Errorf("colours on a buffer")
	}

	// A longer name seen later widens every prefix from then on.
	out.Reset()
	c.WriteLine(Line{Program: "scheduler-1", Text: "x"})
	c.WriteLine(Line{Program: "web", Text: "y"})
	c.Close()
	want = "scheduler-1 | x\nweb         | y\n"
	if got := out.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if err := c.WriteLine(Line{Program: "web"}); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteLine after Close = %v, want ErrClosed", err)
	}
}

func TestConsoleColors(t *testing.T) {
	var out bytes.Buffer
	names := make([]string, len(palette))
	for i := range names {
		names[i] = fmt.Sprintf("p%d", i)
	}
	c := NewConsole(&out, ConsoleConfig{Color: ColorAlways, Names: names})
	seen := map[string]string{}
	for _, n := range names {
		c.WriteLine(Line{Program: n, Text: "t"})
	}
	c.Flush()
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		esc, rest, ok := strings.Cut(l, "m")
		name, _, _ := strings.Cut(rest, " ")
		if !ok || !strings.HasPrefix(esc, "\x1b[") || !strings.Contains(l, "|\x1b[0m t") {
			t.Fatalf("line %q: want ESC[<colour>m name |ESC[0m t", l)
		}
		if other, dup := seen[esc]; dup {
			t.Errorf("%s and %s share colour %q", other, name, esc)
		}
		seen[esc] = name
	}
	if len(seen) != len(palette) {
		t.Errorf("%d colours for %d programs", len(seen), len(palette))
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || IsTerminal(&bytes.Buffer{}) {
		t.Errorf("a file or a buffer taken for a terminal")
	}
	if NewConsole(f, ConsoleConfig{}).Colored() {
		t.Errorf("ColorAuto colours a file")
	}
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal to test with: %v", err)
	}
	defer pty.Close()
	if !IsTerminal(pty) {
		t.Errorf("/dev/ptmx not taken for a terminal")
	}
	if !NewConsole(pty, ConsoleConfig{}).Colored() {
		t.Errorf("ColorAuto does not colour a terminal")
	}
	if NewConsole(pty, ConsoleConfig{Color: ColorNever}).Colored() {
		t.Errorf("ColorNever colours a terminal")
	}
}

// Many programs writing at once through a small buffer: every write to
// the writer holds whole lines only, and every line arrives.
func TestConsoleWholeLines(t *testing.T) {
	var w writes
	c := NewConsole(&w, ConsoleConfig{BufferSize: 100, Names: []string{"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"}})
	const perWriter = 2000
	var wg sync.WaitGroup
	for id := range 8 {
		wg.Go(func() {
			var b []byte
			for seq := range perWriter {
				b = appendTestLine(b[:0], id, seq)
				if err := c.WriteLine(Line{Program: fmt.Sprintf("w%d", id), Text: string(b)}); err != nil {
					t.Error(err)
					return
				}
				if seq%50 == 0 {
					c.Flush()
				}
			}
		})
	}
	wg.Wait()
	c.Close()
	next := make([]int, 8)
	for _, call := range w.calls {
		if !strings.HasSuffix(call, "\n") {
			t.Fatalf("a write ends inside a line: %q", trunc(call))
		}
		for _, l := range strings.Split(strings.TrimSuffix(call, "\n"), "\n") {
			name, text, ok := strings.Cut(l, " | ")
			id, seq, err := parseTestLine(text)
			if !ok || err != nil || name != fmt.Sprintf("w%d", id) {
				t.Fatalf("bad console line %q: %v", trunc(l), err)
			}
			if seq != next[id] {
				t.Fatalf("writer %d: line %d after %d", id, seq, next[id]-1)
			}
			next[id]++
		}
	}
	for id, n := range next {
		if n != perWriter {
			t.Errorf("writer %d: %d lines, want %d", id, n, perWriter)
		}
	}
}

// Write passes the supervisor's own records through after the lines
// buffered before them.
func TestConsoleWriteKeepsOrder(t *testing.T) {
	var w writes
	c := NewConsole(&w, ConsoleConfig{})
	c.WriteLine(Line{Program: "web", Text: "first"})
	fmt.Fprintf(c, "level=INFO msg=started\n")
	c.WriteLine(Line{Program: "web", Text: "second"})
	c.Close()
	want := "web | first\nlevel=INFO msg=started\nweb | second\n"
	if got := w.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// A failing writer loses that write's lines, reports it, and does not
// keep them for ever; the console works again once the writer does.
func TestConsoleWriteError(t *testing.T) {
	w := &writes{fail: errors.New("broken pipe")}
	c := NewConsole(w, ConsoleConfig{})
	c.WriteLine(Line{Program: "web", Text: "lost"})
	if err := c.Flush(); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("Flush = %v, want the write error", err)
	}
	w.mu.Lock()
	w.fail = nil
	w.mu.Unlock()
	c.WriteLine(Line{Program: "web", Text: "kept"})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := w.String(); got != "web | kept\n" {
		t.Fatalf("got %q, want only the line after the error", got)
	}
}

// A line longer than the buffer is written alone and whole.
func TestConsoleLongLine(t *testing.T) {
	var w writes
	c := NewConsole(&w, ConsoleConfig{BufferSize: 16})
	long := strings.Repeat("x", 100)
	c.WriteLine(Line{Program: "a", Text: "short"})
	c.WriteLine(Line{Program: "a", Text: long})
	c.Close()
	want := []string{"a | short\n", "a | " + long + "\n"}
	if len(w.calls) != 2 || w.calls[0] != want[0] || w.calls[1] != want[1] {
		t.Fatalf("writes %q, want %q", w.calls, want)
	}
}

func TestConsoleTimestamps(t *testing.T) {
	var b bytes.Buffer
	c := NewConsole(&b, ConsoleConfig{Names: []string{"web", "worker"}, Timestamps: true})
	at := time.Date(2026, 11, 25, 9, 8, 7, 0, time.UTC)
	if err := c.WriteLine(Line{Program: "web", Text: "up", Time: at}); err != nil {
		t.Fatal(err)
	}
	c.Flush()
	if got, want := b.String(), "09:08:07 web    | up\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
