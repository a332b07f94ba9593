package logs

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	if b[len(b)-1] != '\n' {
		t.Fatalf("%s ends inside a line", path)
	}
	return strings.Split(string(b[:len(b)-1]), "\n")
}

// logFiles lists path and its rotated files, oldest first.
func logFiles(t *testing.T, path string) []string {
	t.Helper()
	matches, err := filepath.Glob(path + ".*")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for i := len(matches); i >= 1; i-- {
		files = append(files, fmt.Sprintf("%s.%d", path, i))
	}
	return append(files, path)
}

func TestFileRotation(t *testing.T) {
	for _, maxFiles := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint(maxFiles), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", "web.log")
			const maxSize = 1000
			f, err := OpenFile(FileConfig{Path: path, MaxSize: maxSize, MaxFiles: maxFiles, BufferSize: 300})
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for seq := range 500 {
				text := fmt.Sprintf("%04d-%s", seq, strings.Repeat("x", seq%60))
				all = append(all, text)
				if err := f.WriteLine(Line{Text: text}); err != nil {
					t.Fatal(err)
				}
				if seq%7 == 0 {
					f.Flush()
				}
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			files := logFiles(t, path)
			if len(files) != maxFiles {
				t.Fatalf("%d files %q, want %d", len(files), files, maxFiles)
			}
			var kept []string
			for _, name := range files {
				st, err := os.Stat(name)
				if err != nil {
					t.Fatal(err)
				}
				if st.Size() > maxSize {
					t.Errorf("%s holds %d bytes, more than %d", name, st.Size(), maxSize)
				}
				if name != path && st.Size() < maxSize-70 {
					t.Errorf("%s rotated at %d bytes, well before %d", name, st.Size(), maxSize)
				}
				kept = append(kept, readLines(t, name)...)
			}
			// Whole lines, in order, and the newest ones.
			if len(kept) == 0 || !slices.Equal(kept, all[len(all)-len(kept):]) {
				t.Fatalf("files hold %d lines that are not the last lines written", len(kept))
			}
		})
	}
}

func TestFileLineLongerThanMaxSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.log")
	f, err := OpenFile(FileConfig{Path: path, MaxSize: 10, MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"ab", strings.Repeat("L", 25), "cd"} {
		f.WriteLine(Line{Text: s})
	}
	f.Close()
	got := [][]string{readLines(t, path+".2"), readLines(t, path+".1"), readLines(t, path)}
	want := [][]string{{"ab"}, {strings.Repeat("L", 25)}, {"cd"}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("file %d holds %q, want %q", i, got[i], want[i])
		}
	}
}

// An existing file is appended to, and its size counts for rotation;
// rotated files beyond MaxFiles, from an earlier setting, go.
func TestFileAppendsAndCleansUp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.log")
	os.WriteFile(path, []byte("old1\nold2\n"), 0o644)
	os.WriteFile(path+".7", []byte("ancient\n"), 0o644)
	f, err := OpenFile(FileConfig{Path: path, MaxSize: 15, MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	f.WriteLine(Line{Text: "new1"}) // 10 + 5 = 15: fits
	f.WriteLine(Line{Text: "new2"}) // would be 20: rotates
	f.Close()
	if got := readLines(t, path+".1"); !slices.Equal(got, []string{"old1", "old2", "new1"}) {
		t.Errorf("%s.1 holds %q", path, got)
	}
	if got := readLines(t, path); !slices.Equal(got, []string{"new2"}) {
		t.Errorf("%s holds %q", path, got)
	}
	if _, err := os.Stat(path + ".7"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s.7 left behind: %v", path, err)
	}
}

func TestFileReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.log")
	f, err := OpenFile(FileConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	f.WriteLine(Line{Text: "before"})
	// An outside rotation moves the file away; lines still buffered go
	// with it.
	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := f.Reopen(); err != nil {
		t.Fatal(err)
	}
	f.WriteLine(Line{Text: "after"})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readLines(t, path+".moved"); !slices.Equal(got, []string{"before"}) {
		t.Errorf("moved file holds %q, want [before]", got)
	}
	if got := readLines(t, path); !slices.Equal(got, []string{"after"}) {
		t.Errorf("new file holds %q, want [after]", got)
	}
	if err := f.WriteLine(Line{Text: "late"}); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteLine after Close = %v, want ErrClosed", err)
	}
}

// A file that cannot be opened any more is retried at the next write, and
// the bytes lost in between are reported.
func TestFileReopenOnDemand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	path := filepath.Join(dir, "web.log")
	var logged syncBuf
	f, err := OpenFile(FileConfig{Path: path, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// A directory where the file was cannot be opened, and is not removed.
	os.Remove(path)
	must(t, os.Mkdir(path, 0o755))
	if err := f.Reopen(); err == nil {
		t.Fatal("Reopen onto a directory succeeded")
	}
	f.WriteLine(Line{Text: "lost"})
	if err := f.Flush(); err == nil {
		t.Fatal("Flush with no file open succeeded")
	}
	must(t, os.Remove(path))
	f.WriteLine(Line{Text: "kept"})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logged.String(), "writes work again") || !strings.Contains(logged.String(), "lost_bytes=5") {
		t.Errorf("log:\n%s\nwant the recovery with lost_bytes=5", logged.String())
	}
	if got := readLines(t, path); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("file holds %q, want [kept]", got)
	}
}

func TestOpenFileErrors(t *testing.T) {
	if _, err := OpenFile(FileConfig{}); err == nil {
		t.Error("OpenFile without a path succeeded")
	}
	dir := t.TempDir()
	if _, err := OpenFile(FileConfig{Path: dir}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("OpenFile of a directory = %v, want an error naming it", err)
	}
}

// A chunk of at least half the buffer that finds it empty is written to
// the file at once, not copied into the buffer to wait for a flush; a
// smaller one waits in the buffer, and what the buffer holds is written
// before any later lines, so the order and the whole lines hold.
func TestFileWritesLargeChunkStraight(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.log")
	f, err := OpenFile(FileConfig{Path: path, BufferSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	big := []byte(strings.Repeat(strings.Repeat("b", 99)+"\n", 5)) // half the buffer
	if err := f.WriteChunk(&Chunk{Data: big}); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, path); got != int64(len(big)) {
		t.Fatalf("after a chunk of half the buffer the file holds %d bytes, want %d", got, len(big))
	}
	small := []byte("small\n")
	if err := f.WriteChunk(&Chunk{Data: small}); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, path); got != int64(len(big)) {
		t.Fatalf("a small chunk went to the file at once (%d bytes), want it buffered", got)
	}
	// The buffer is not empty: this one goes after the small line.
	if err := f.WriteChunk(&Chunk{Data: big}); err != nil {
		t.Fatal(err)
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	want := string(big) + string(small) + string(big)
	if b, err := os.ReadFile(path); err != nil || string(b) != want {
		t.Fatalf("file holds %d bytes (%v), want the three chunks in order (%d bytes)", len(b), err, len(want))
	}
}

// numberedLines returns n lines of 100 bytes, newline included, numbered
// from first.
func numberedLines(first, n int) []byte {
	var b []byte
	for i := first; i < first+n; i++ {
		b = fmt.Appendf(b, "%09d %s\n", i, strings.Repeat("x", 89))
	}
	return b
}

// A fast writer's chunks go to the file in writes that end at multiples
// of 64 KiB, the rest of the line cut there waiting in the buffer until
// the next write or a flush; what the file holds after the flush is every
// line, whole and in order. A file removed while it ends inside a line
// gets that line's rest; the file made in its place starts with a whole
// line.
func TestFileAlignsLargeWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.log")
	f, err := OpenFile(FileConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const perChunk = 655 // a 64 KiB pipe's worth of 100-byte lines
	for i := range 5 {
		if err := f.WriteChunk(&Chunk{Data: numberedLines(i*perChunk, perChunk)}); err != nil {
			t.Fatal(err)
		}
		if got := fileSize(t, path); got%(64<<10) != 0 {
			t.Fatalf("after chunk %d the file holds %d bytes, not a multiple of %d", i, got, 64<<10)
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := numberedLines(0, 5*perChunk); !bytes.Equal(b, want) {
		t.Fatalf("the file holds %d bytes, want the %d lines in order (%d bytes)", len(b), 5*perChunk, len(want))
	}

	// Now the file ends inside a line when it is removed.
	if err := f.WriteChunk(&Chunk{Data: numberedLines(5*perChunk, 2*perChunk)}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || b[len(b)-1] == '\n' {
		t.Fatalf("the file (%v) ends with a whole line; the test wants it cut inside one", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteChunk(&Chunk{Data: numberedLines(7*perChunk, perChunk)}); err != nil {
		t.Fatal(err)
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) == 0 {
		t.Fatal("nothing written after the file was removed")
	}
	for i, l := range lines {
		if len(l) != 99 || l[9] != ' ' {
			t.Fatalf("line %d of the new file is not a whole line: %q", i, l)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, fmt.Sprintf("%09d ", 8*perChunk-1)) {
		t.Fatalf("the new file's last line is %.12q…, want the last one written", last)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
