package logs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The test binary also plays the programs whose output is logged,
// dispatched on this variable.
const helperEnv = "LOGS_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "lines":
		// Writes LOGS_TEST_N numbered lines for writer LOGS_TEST_ID to
		// stdout, in writes of LOGS_TEST_CHUNK bytes (0: one write per
		// line), then LOGS_TEST_TAIL without a newline, and exits.
		id, _ := strconv.Atoi(os.Getenv("LOGS_TEST_ID"))
		n, _ := strconv.Atoi(os.Getenv("LOGS_TEST_N"))
		chunk, _ := strconv.Atoi(os.Getenv("LOGS_TEST_CHUNK"))
		var w io.Writer = os.Stdout
		var bw *bufio.Writer
		if chunk > 0 {
			bw = bufio.NewWriterSize(os.Stdout, chunk)
			w = bw
		}
		var line []byte
		for seq := range n {
			line = appendTestLine(line[:0], id, seq)
			line = append(line, '\n')
			if _, err := w.Write(line); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		io.WriteString(w, os.Getenv("LOGS_TEST_TAIL"))
		if bw != nil {
			bw.Flush()
		}
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
}

// appendTestLine appends writer id's line number seq: the id, the number
// and a payload whose letter and length follow from both, so that a line
// torn, merged or misattributed fails to parse back.
func appendTestLine(b []byte, id, seq int) []byte {
	b = fmt.Appendf(b, "w%d %07d ", id, seq)
	c := byte('a' + (seq+id)%26)
	for range (seq*7919 + id*31) % 250 {
		b = append(b, c)
	}
	return b
}

// parseTestLine checks a line made by appendTestLine and returns its id
// and number.
func parseTestLine(s string) (id, seq int, err error) {
	f := strings.SplitN(s, " ", 3)
	if len(f) < 2 || !strings.HasPrefix(f[0], "w") {
		return 0, 0, fmt.Errorf("malformed line %q", trunc(s))
	}
	if id, err = strconv.Atoi(f[0][1:]); err != nil {
		return 0, 0, fmt.Errorf("malformed id in %q", trunc(s))
	}
	if seq, err = strconv.Atoi(f[1]); err != nil {
		return 0, 0, fmt.Errorf("malformed number in %q", trunc(s))
	}
	if want := string(appendTestLine(nil, id, seq)); s != want {
		return 0, 0, fmt.Errorf("torn line %q, want %q", trunc(s), trunc(want))
	}
	return id, seq, nil
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// startWriter runs the "lines" helper with its stdout on w.
func startWriter(t testing.TB, w *os.File, id, n, chunk int, tail string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=lines",
		"LOGS_TEST_ID="+strconv.Itoa(id), "LOGS_TEST_N="+strconv.Itoa(n),
		"LOGS_TEST_CHUNK="+strconv.Itoa(chunk), "LOGS_TEST_TAIL="+tail)
	cmd.Stdout = w
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting writer %d: %v", id, err)
	}
	return cmd
}

// collect is a sink that keeps every line and counts flushes.
type collect struct {
	mu      sync.Mutex
	lines   []Line
	flushes int
}

func (c *collect) WriteLine(l Line) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, l)
	return nil
}

func (c *collect) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushes++
	return nil
}

func (c *collect) all() []Line {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Line(nil), c.lines...)
}
