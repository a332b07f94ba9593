package logs

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A full disk is one warning per episode and one on recovery with the
// bytes lost, not one per line.
func TestLogFullDiskWarnsOncePerEpisode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	must(t, os.Chmod(dir, 0o755))
	filler := filepath.Join(dir, "filler")
	var logged syncBuf
	f, err := OpenFile(FileConfig{Path: filepath.Join(dir, "out.log"), BufferSize: 1, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	must(t, err)
	// Fill the disk, then write 100 lines of 100 bytes that cannot land.
	os.WriteFile(filler, make([]byte, 128<<10), 0o600)
	line := strings.Repeat("z", 99)
	for range 100 {
		f.WriteLine(Line{Text: line})
	}
	must(t, os.Remove(filler))
	f.WriteLine(Line{Text: "back"})
	must(t, f.Close())
	out := logged.String()
	if n := strings.Count(out, "writes failing"); n != 1 {
		t.Fatalf("%d failure warnings, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "writes work again") {
		t.Fatalf("no recovery report:\n%s", out)
	}
	if !strings.Contains(out, "lost_bytes=") || strings.Contains(out, "lost_bytes=0") {
		t.Fatalf("recovery without the bytes lost:\n%s", out)
	}
}
