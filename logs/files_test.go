package logs

import (
	"os"
	"path/filepath"
	"testing"
)

// Two Programs on one path through a Files share one File: it stays open
// while either holds it, takes the latest limits, and closes with the last.
func TestFilesShareOneWriterPerPath(t *testing.T) {
	files := NewFiles()
	path := filepath.Join(t.TempDir(), "shared.log")
	open := func(name string, maxSize int64) *Program {
		p, err := NewProgram(ProgramConfig{
			Name: name, Files: files,
			Stdout: Output{File: FileConfig{Path: path, MaxSize: maxSize, MaxFiles: 2}},
			Stderr: Output{File: FileConfig{Path: path}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := open("a", 1<<20), open("b", 100)
	if len(a.files) != 1 || len(b.files) != 1 || a.files[0] != b.files[0] {
		t.Fatalf("programs on one path got files %p and %p, want one File", a.files, b.files)
	}
	if got := files.files[mustAbs(t, path)].refs; got != 2 {
		t.Fatalf("refs = %d, want 2", got)
	}
	f := a.files[0]
	if f.cfg.MaxSize != 100 {
		t.Errorf("MaxSize = %d, want the latest open's 100", f.cfg.MaxSize)
	}
	runWriter(t, a, Stdout, 0, 5, 0, "")
	closeProgram(t, a)
	// b still writes through the same, open File.
	runWriter(t, b, Stdout, 1, 5, 0, "")
	if err := f.Flush(); err != nil {
		t.Fatalf("File closed with b still holding it: %v", err)
	}
	closeProgram(t, b)
	if len(files.files) != 0 {
		t.Errorf("%d files still held after every program closed", len(files.files))
	}
	if err := f.WriteLine(Line{Text: "late"}); err == nil {
		t.Error("the File took a line after the last holder closed it")
	}
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Errorf("no rotation at the latest max_size 100: %v", err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
