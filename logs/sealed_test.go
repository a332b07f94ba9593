package logs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// sealedDir is a log directory only root can write, as /var/log or /dev
// are: nothing in it was put there by a program.
func sealedDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: a directory only root can write")
	}
	dir := filepath.Join(t.TempDir(), "logs")
	must(t, os.Mkdir(dir, 0o755))
	return dir
}

// What root made at a log name in a directory only root can write (a
// FIFO, a device, someone's file, a directory) is refused with an error
// naming it, and left as it was: supervise removes only what a program
// could have put there.
func TestLogSealedDirRefusesWhatItDidNotMake(t *testing.T) {
	dir := sealedDir(t)
	fifo := filepath.Join(dir, "fifo.log")
	must(t, syscall.Mkfifo(fifo, 0o600))
	dev := filepath.Join(dir, "null.log")
	must(t, syscall.Mknod(dev, syscall.S_IFCHR|0o600, int(1<<8|3))) // /dev/null's 1:3
	other := filepath.Join(dir, "other.log")
	must(t, os.WriteFile(other, []byte("uid 1000's\n"), 0o644))
	must(t, os.Chown(other, 1000, 1000))
	for _, tc := range []struct{ path, what string }{
		{fifo, "a FIFO"}, {dev, "a device"}, {other, "a file of uid 1000"},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			before, err := os.Lstat(tc.path)
			must(t, err)
			f, err := OpenFile(FileConfig{Path: tc.path})
			if err == nil {
				f.Close()
				t.Fatalf("opened %s over %s", tc.path, tc.what)
			}
			if !strings.Contains(err.Error(), tc.what) || !strings.Contains(err.Error(), "not made by supervise") {
				t.Errorf("err %q, want it to name %s and say it was left alone", err, tc.what)
			}
			after, err := os.Lstat(tc.path)
			if err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
				t.Errorf("%s was replaced: %v %v", tc.path, after, err)
			}
		})
	}
	if b, _ := os.ReadFile(other); string(b) != "uid 1000's\n" {
		t.Errorf("the other user's file now holds %q", b)
	}
}

// A symlink root made in a directory only root can write is the
// administrator's choice: lines go through it (to a file, or to
// supervise's own stdout for /proc/self/fd/1), the link stays, and what it
// points to is never rotated away nor truncated.
func TestLogSealedSymlinkWrittenThrough(t *testing.T) {
	dir := sealedDir(t)
	target := filepath.Join(dir, "real.log")
	must(t, os.WriteFile(target, []byte("old\n"), 0o640))
	link := filepath.Join(dir, "app.log")
	must(t, os.Symlink(target, link))
	f, err := OpenFile(FileConfig{Path: link, MaxSize: 4096, MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 1000)
	for range 10 { // 10 KB: past max_size, which a link does not rotate
		must(t, f.WriteLine(Line{Text: long}))
	}
	must(t, f.Close())
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink is gone: %v %v", st, err)
	}
	b, _ := os.ReadFile(target)
	if !strings.HasPrefix(string(b), "old\n") || len(b) != 4+10*1001 {
		t.Errorf("the target holds %d bytes, want its 4 and the 10 lines", len(b))
	}
	if _, err := os.Lstat(link + ".1"); err == nil {
		t.Errorf("rotated a file through a symlink")
	}

	// To supervise's own stdout: the test's stdout is swapped for a pipe.
	r, w, err := os.Pipe()
	must(t, err)
	saved, err := syscall.Dup(1)
	must(t, err)
	must(t, syscall.Dup2(int(w.Fd()), 1))
	restore := func() { syscall.Dup2(saved, 1); syscall.Close(saved) }
	defer restore()
	console := filepath.Join(dir, "console.log")
	must(t, os.Symlink("/proc/self/fd/1", console))
	f, err = OpenFile(FileConfig{Path: console})
	if err == nil {
		err = f.WriteLine(Line{Text: "to the console"})
		f.Close()
	}
	restore()
	w.Close()
	must(t, err)
	got := make([]byte, 100)
	n, _ := r.Read(got)
	if string(got[:n]) != "to the console\n" {
		t.Errorf("stdout got %q", got[:n])
	}
	if st, err := os.Lstat(console); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the console symlink is gone: %v %v", st, err)
	}
}

// A symlink in a directory only root can write that leads through
// something a program can write is not followed.
func TestLogSealedSymlinkIntoProgramDirRefused(t *testing.T) {
	dir := sealedDir(t)
	pdir, secret := programDir(t)
	must(t, os.Symlink(filepath.Join(pdir, "x.log"), filepath.Join(dir, "app.log")))
	must(t, os.Symlink(secret, filepath.Join(pdir, "x.log")))
	must(t, os.Lchown(filepath.Join(pdir, "x.log"), nobody.UID, nobody.GID))
	f, err := OpenFile(FileConfig{Path: filepath.Join(dir, "app.log")})
	if err == nil {
		f.WriteLine(Line{Text: "boom"})
		f.Close()
		t.Fatal("opened a log through a directory the program can write")
	}
	unchanged(t, secret)
	if _, err := os.Lstat(filepath.Join(pdir, "x.log")); err != nil {
		t.Errorf("the program's symlink was removed: %v", err)
	}
}
