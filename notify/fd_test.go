package notify

import (
	"os"
	"testing"
	"time"
)

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(deadline):
		t.Fatalf("%s: not within %v", what, deadline)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestFDChild: a child process given the write end as fd 3 becomes ready
// when it writes a newline there.
func TestFDChild(t *testing.T) {
	for _, tc := range []struct {
		name, write string
		ready       bool
	}{
		{"newline", "\n", true},
		{"text then newline", "listening on :8080\n", true},
		{"no newline", "almost", false},
		{"nothing", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, w, err := NewFD()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd := helper(t, "fd", tc.write)
			cmd.ExtraFiles = []*os.File{w} // fd 3
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close() // the child has its copy
			if tc.ready {
				waitClosed(t, f.Ready(), "ready")
			} else {
				// The child closed fd 3: the reader sees EOF and ends.
				waitClosed(t, f.done, "reader end after the child closed its fd")
				if isClosed(f.Ready()) {
					t.Fatalf("ready after %q, which has no newline", tc.write)
				}
			}
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("helper: %v", err)
			}
		})
	}
}

// TestFDKeepsDraining: writes after the newline neither block the program
// nor break its pipe.
func TestFDKeepsDraining(t *testing.T) {
	f, w, err := NewFD()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString("ready\n"); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, f.Ready(), "ready")
	w.SetWriteDeadline(time.Now().Add(deadline))
	chunk := make([]byte, 64<<10)
	for range 32 { // 2 MiB: far more than a pipe buffer
		if _, err := w.Write(chunk); err != nil {
			t.Fatalf("write after ready: %v", err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestFDCloseWhileWaiting: Close ends a reader blocked on a silent,
// still-open pipe.
func TestFDCloseWhileWaiting(t *testing.T) {
	f, w, err := NewFD()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	done := make(chan struct{})
	go func() { f.Close(); close(done) }()
	waitClosed(t, done, "Close")
	if isClosed(f.Ready()) {
		t.Fatal("ready without a newline")
	}
}
