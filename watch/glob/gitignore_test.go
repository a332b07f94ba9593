package glob

import "testing"

func TestIgnore(t *testing.T) {
	ig := ParseIgnore("# comment\n\n/log/*\n!/log/.keep\ntmp/\n*.bak  \n\\#hash\n\\!bang\nbuild/**\n!build/keep/\ndocs/**/gen\n**/cache\n/top\nnested/file\n[\n\r\n")
	for _, c := range []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{"log/dev.log", false, true},
		{"log/.keep", false, false},
		{"log", true, false}, // /log/* is what is inside, not log itself
		{"src/log/x", false, false},
		{"tmp", true, true},
		{"tmp", false, false}, // a file named tmp: tmp/ is for folders
		{"a/tmp/b.txt", false, true},
		{"x.bak", false, true},
		{"deep/y.bak", false, true},
		{"#hash", false, true},
		{"!bang", false, true},
		{"build", true, false},
		{"build/a.o", false, true},
		{"build/keep/x", false, true}, // build/keep comes back, but x matches build/** itself
		{"docs/gen", true, true},
		{"docs/a/b/gen", false, true},
		{"docs/a/b/gen2", false, false},
		{"any/where/cache", true, true},
		{"top", false, true},
		{"sub/top", false, false},
		{"nested/file", false, true},
		{"x/nested/file", false, false},
		{"app/app.rb", false, false},
	} {
		if got := ig.Match(c.rel, c.isDir); got != c.want {
			t.Errorf("Match(%q, dir=%v) = %v, want %v", c.rel, c.isDir, got, c.want)
		}
	}
	var none *Ignore
	if none.Match("x", false) {
		t.Error("a nil Ignore matched")
	}
	neg := ParseIgnore("*.log\n!keep.log\n")
	if neg.Match("keep.log", false) || !neg.Match("a/b.log", false) {
		t.Error("negation: keep.log must stay, b.log go")
	}
}
