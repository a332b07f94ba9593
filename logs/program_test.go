package logs

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func closeProgram(t *testing.T, p *Program) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatalf("closing program logs: %v", err)
	}
}

// runWriter runs the "lines" helper on a new pipe of p and waits for it;
// the supervisor closes its copy of the write end once the child started.
func runWriter(t *testing.T, p *Program, stream string, id, n, chunk int, tail string) {
	t.Helper()
	w, err := p.NewPipe(stream)
	if err != nil {
		t.Fatal(err)
	}
	cmd := startWriter(t, w, id, n, chunk, tail)
	w.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("writer %d: %v", id, err)
	}
}

// A program's last line without a newline is logged, in the console and
// the file, once the program exits.
func TestProgramPartialLastLine(t *testing.T) {
	var out writes
	console := NewConsole(&out, ConsoleConfig{})
	path := filepath.Join(t.TempDir(), "web.log")
	p, err := NewProgram(ProgramConfig{
		Name: "web", Console: console,
		Stdout: Output{Console: true, File: FileConfig{Path: path}},
	})
	if err != nil {
		t.Fatal(err)
	}
	runWriter(t, p, Stdout, 0, 3, 0, "no newline")
	closeProgram(t, p)
	var want []string
	for seq := range 3 {
		want = append(want, string(appendTestLine(nil, 0, seq)))
	}
	want = append(want, "no newline")
	if got := readLines(t, path); !slices.Equal(got, want) {
		t.Errorf("file holds %q, want %q", got, want)
	}
	if got := out.String(); !strings.HasSuffix(got, "web | no newline\n") || strings.Count(got, "\n") != 4 {
		t.Errorf("console got %q, want 4 lines ending with the partial one", got)
	}
}

// Ring Last and Follow across two runs of a program (a restart): the
// follower sees both runs' lines in order, the ring keeps the last ones.
func TestProgramRingAcrossRestart(t *testing.T) {
	ring := NewRing(RingConfig{Program: "web", Size: 50})
	p, err := NewProgram(ProgramConfig{Name: "web", Ring: ring})
	if err != nil {
		t.Fatal(err)
	}
	follow, cancel := ring.Follow(t.Context(), 0)
	defer cancel()

	runWriter(t, p, Stdout, 1, 30, 0, "")
	run1 := receive(t, follow, 30)
	runWriter(t, p, Stdout, 2, 30, 4096, "bye")
	run2 := receive(t, follow, 31)
	closeProgram(t, p)

	check := func(lines []Line, id int, tail string) {
		t.Helper()
		for seq, l := range lines[:30] {
			if want := string(appendTestLine(nil, id, seq)); l.Text != want || l.Program != "web" || l.Stream != Stdout {
				t.Fatalf("run %d line %d: %+v, want %q from web stdout", id, seq, l, trunc(want))
			}
		}
		if tail != "" && (lines[30].Text != tail || !lines[30].Partial) {
			t.Fatalf("run %d ends with %+v, want partial %q", id, lines[30], tail)
		}
	}
	check(run1, 1, "")
	check(run2, 2, "bye")

	last := ring.Last(-1)
	if want := slices.Concat(run1[11:], run2); !slices.Equal(texts(last), texts(want)) {
		t.Errorf("Last(-1) holds %d lines, want the last 50 of both runs", len(last))
	}
	if got := texts(ring.Last(2)); !slices.Equal(got, []string{run2[29].Text, "bye"}) {
		t.Errorf("Last(2) = %q", got)
	}
	ring.Close()
	closed(t, follow)
	ring.Wait()
}

// Streams go where their Output says; a shared path is one file; other
// stream names (hooks) go where stdout goes.
func TestProgramRouting(t *testing.T) {
	dir := t.TempDir()
	var out writes
	console := NewConsole(&out, ConsoleConfig{})
	both := filepath.Join(dir, "both.log")
	p, err := NewProgram(ProgramConfig{
		Name: "web", Console: console,
		Stdout: Output{File: FileConfig{Path: both}},
		Stderr: Output{Console: true, File: FileConfig{Path: both}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.files) != 1 {
		t.Errorf("%d files for one path", len(p.files))
	}
	for _, s := range []string{Stdout, Stderr} {
		w, err := p.NewPipe(s)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "to %s\n", s)
		w.Close()
	}
	hook := p.Writer("pre_start")
	io.WriteString(hook, "migrating\ndone")
	hook.Close()
	closeProgram(t, p)

	got := readLines(t, both)
	slices.Sort(got)
	if want := []string{"done", "migrating", "to stderr", "to stdout"}; !slices.Equal(got, want) {
		t.Errorf("file holds %q, want %q", got, want)
	}
	if got := out.String(); got != "web | to stderr\n" {
		t.Errorf("console got %q, want only stderr", got)
	}
	if _, err := p.NewPipe(Stdout); err == nil {
		t.Error("NewPipe after Close succeeded")
	}
}

// Close waits for the pumps; a pipe someone still holds open (a child that
// outlived its program) is cut when ctx ends, keeping what was read.
func TestProgramCloseCutsHeldPipe(t *testing.T) {
	ring := NewRing(RingConfig{})
	p, err := NewProgram(ProgramConfig{Name: "web", Ring: ring})
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.NewPipe(Stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ch, cancel := ring.Follow(t.Context(), 0)
	defer cancel()
	io.WriteString(w, "line\nhalf")
	receive(t, ch, 1) // the pump has read it
	ctx, stop := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer stop()
	if err := p.Close(ctx); err == nil || !strings.Contains(err.Error(), "still open") {
		t.Fatalf("Close = %v, want an error about pipes still open", err)
	}
	if got := texts(ring.Last(-1)); !slices.Equal(got, []string{"line", "half"}) {
		t.Errorf("ring holds %q, want [line half]", got)
	}
}

// The write end given to a child is a blocking descriptor.
func TestProgramPipeBlocking(t *testing.T) {
	p, err := NewProgram(ProgramConfig{Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.NewPipe(Stdout)
	if err != nil {
		t.Fatal(err)
	}
	flags, err := fcntlFlags(w)
	w.Close()
	closeProgram(t, p)
	if err != nil {
		t.Skipf("cannot read descriptor flags: %v", err)
	}
	if flags&nonBlock != 0 {
		t.Errorf("write end is non-blocking")
	}
}

// 200,000 lines from 4 programs writing at once through real pipes reach
// the console and the (rotating) files: none lost, none torn, each
// program's in order.
func TestProgramManyWriters(t *testing.T) {
	const writers, perWriter = 4, 50000
	dir := t.TempDir()
	consoleFile, err := os.Create(filepath.Join(dir, "console"))
	if err != nil {
		t.Fatal(err)
	}
	defer consoleFile.Close()
	console := NewConsole(consoleFile, ConsoleConfig{})
	var progs []*Program
	for id := range writers {
		p, err := NewProgram(ProgramConfig{
			Name:    fmt.Sprintf("w%d", id),
			Console: console,
			Ring:    NewRing(RingConfig{}),
			Stdout: Output{Console: true, File: FileConfig{
				Path: filepath.Join(dir, fmt.Sprintf("w%d.log", id)), MaxSize: 1 << 20, MaxFiles: 100,
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		progs = append(progs, p)
	}
	// Writer 0 writes each line on its own; the others in buffers of
	// several sizes, which tears lines across writes.
	chunks := []int{0, 4096, 65536, 1000}
	var cmds []func() error
	for id, p := range progs {
		w, err := p.NewPipe(Stdout)
		if err != nil {
			t.Fatal(err)
		}
		cmd := startWriter(t, w, id, perWriter, chunks[id], "")
		w.Close()
		cmds = append(cmds, cmd.Wait)
	}
	for id, wait := range cmds {
		if err := wait(); err != nil {
			t.Fatalf("writer %d: %v", id, err)
		}
	}
	for _, p := range progs {
		closeProgram(t, p)
	}
	console.Close()

	// The console: every line whole, attributed to its writer, in order.
	if _, err := consoleFile.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	next := make([]int, writers)
	sc := bufio.NewScanner(consoleFile)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, text, ok := strings.Cut(sc.Text(), " | ")
		id, seq, err := parseTestLine(text)
		if !ok || err != nil || name != fmt.Sprintf("w%d", id) {
			t.Fatalf("console: bad line %q: %v", trunc(sc.Text()), err)
		}
		if seq != next[id] {
			t.Fatalf("console: writer %d line %d after %d", id, seq, next[id]-1)
		}
		next[id]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for id, n := range next {
		if n != perWriter {
			t.Errorf("console: writer %d has %d lines, want %d", id, n, perWriter)
		}
	}

	// The files: every rotated file holds whole lines, together all of
	// them in order.
	for id := range writers {
		path := filepath.Join(dir, fmt.Sprintf("w%d.log", id))
		files := logFiles(t, path)
		if len(files) < 2 {
			t.Errorf("writer %d: %d files, want rotation to have happened", id, len(files))
		}
		seq := 0
		for _, f := range files {
			for _, l := range readLines(t, f) {
				gotID, gotSeq, err := parseTestLine(l)
				if err != nil || gotID != id || gotSeq != seq {
					t.Fatalf("%s: line %q, want writer %d line %d: %v", f, trunc(l), id, seq, err)
				}
				seq++
			}
		}
		if seq != perWriter {
			t.Errorf("writer %d: files hold %d lines, want %d", id, seq, perWriter)
		}
	}
}

// Wait returns once the pipes made so far are drained, and gives up (with
// an error, closing nothing) when ctx ends first.
func TestProgramWait(t *testing.T) {
	ring := NewRing(RingConfig{})
	p, err := NewProgram(ProgramConfig{Name: "web", Ring: ring})
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.NewPipe(Stdout)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "a\nb")
	ctx, stop := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer stop()
	if err := p.Wait(ctx); err == nil {
		t.Fatal("Wait returned while the pipe was still open")
	}
	io.WriteString(w, "c\n")
	w.Close()
	if err := p.Wait(t.Context()); err != nil {
		t.Fatalf("Wait after the writer closed: %v", err)
	}
	// Drained means logged: nothing is left in flight.
	if got := texts(ring.Last(-1)); !slices.Equal(got, []string{"a", "bc"}) {
		t.Errorf("ring holds %q, want [a bc]", got)
	}
	closeProgram(t, p)
}

// flushWatch is a sink that reports, on flushed, each flush that finds
// at least want lines written.
type flushWatch struct {
	collect
	want    int
	flushed chan struct{}
}

func (f *flushWatch) Flush() error {
	f.collect.Flush()
	if len(f.all()) >= f.want {
		select {
		case f.flushed <- struct{}{}:
		default:
		}
	}
	return nil
}

// Output that exactly fills a read and is followed by silence is flushed
// at once: the pump does not wait for more output before the buffered
// lines reach the file and the console.
func TestPumpFlushesReadThatFilledItsBuffer(t *testing.T) {
	sink := &flushWatch{want: initialBuffer / 64, flushed: make(chan struct{}, 1)}
	p, err := NewProgram(ProgramConfig{Name: "quiet"})
	if err != nil {
		t.Fatal(err)
	}
	p.stdout = sink
	w, err := p.NewPipe(Stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer closeProgram(t, p)
	defer w.Close()
	// One write, smaller than PIPE_BUF, so one read takes it whole: lines
	// of 64 bytes that fill the pump's first buffer exactly.
	line := strings.Repeat("q", 63) + "\n"
	if _, err := w.WriteString(strings.Repeat(line, initialBuffer/64)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sink.flushed:
	case <-time.After(10 * time.Second): // bounds a hang only: the program writes nothing more
		t.Fatalf("%d lines written by a program now quiet, not flushed after 10 s", len(sink.all()))
	}
}

// A reader the runtime does not poll (a pipe in blocking mode) is read
// as before: its sink is flushed after each read that took what there
// was, so its lines reach the sink while the program is quiet too.
func TestPumpFlushesUnpolledReader(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil { // blocking: os.NewFile does not poll it
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer w.Close()
	sink := &flushWatch{want: 3, flushed: make(chan struct{}, 1)}
	p := StartPump(r, sink, PumpConfig{Program: "blocking", Stream: Stdout})
	if p.raw != nil {
		t.Fatal("a blocking pipe was taken as polled")
	}
	if _, err := w.WriteString("a\nb\nc\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sink.flushed:
	case <-time.After(10 * time.Second): // bounds a hang only
		t.Fatalf("%d lines, not flushed after 10 s", len(sink.all()))
	}
	w.Close()
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	r.Close()
}
