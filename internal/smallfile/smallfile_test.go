package smallfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	exact := filepath.Join(dir, "exact")
	over := filepath.Join(dir, "over")
	fifo := filepath.Join(dir, "fifo")
	if err := os.WriteFile(exact, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(over, []byte("0123456789a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := Read(exact, 10)
	if err != nil || string(data) != "0123456789" {
		t.Fatalf("a file of the bound: %q %v", data, err)
	}
	var tooLarge *TooLargeError
	if _, err := Read(over, 10); !errors.As(err, &tooLarge) || tooLarge.Max != 10 || err.Error() != "larger than 10 bytes" {
		t.Errorf("a file past the bound: %v", err)
	}
	// Neither waits: a FIFO nobody writes, a device that never ends.
	for path, kind := range map[string]string{fifo: "a FIFO", "/dev/zero": "a device", dir: "a directory"} {
		_, err := Read(path, 10)
		if !errors.Is(err, ErrNotRegular) || err.Error() != "not a regular file but "+kind {
			t.Errorf("%s: %v, want not a regular file but %s", path, err, kind)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing"), 10); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing file: %v", err)
	}
}
