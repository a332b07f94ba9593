package config

import (
	"testing"

	"github.com/BurntSushi/toml"
)

func TestLineIndex(t *testing.T) {
	doc := `# comment [not.a.table]
top = 1
multi = """
[fake.table]
key = "no"
"""
lit = '''
x = 1'''
arr = [
  "a]",   # ] in a string
  { in = 2 },
  [1, 2],
]

[program.web]
command = "x" # trailing
env = { A = "1", "B.C" = '2', nested = { deep = true } }
"quoted key" = 3
'lit.key' = 4
dotted.a.b = 5

[ program . "sp ace" . hooks.pre_start ]
timeout = "1s"

[[arr2]]
k = 1
[[arr2]]
k = 2
esc = "\u00e9\"\\"
"k\u00e9y" = 6
`
	ix := indexLines(doc)
	tests := []struct {
		path []string
		line int
	}{
		{[]string{"top"}, 2},
		{[]string{"multi"}, 3},
		{[]string{"lit"}, 7},
		{[]string{"arr"}, 9},
		{[]string{"arr", "in"}, 11},
		{[]string{"program"}, 15},
		{[]string{"program", "web"}, 15},
		{[]string{"program", "web", "command"}, 16},
		{[]string{"program", "web", "env"}, 17},
		{[]string{"program", "web", "env", "B.C"}, 17},
		{[]string{"program", "web", "env", "nested", "deep"}, 17},
		{[]string{"program", "web", "quoted key"}, 18},
		{[]string{"program", "web", "lit.key"}, 19},
		{[]string{"program", "web", "dotted", "a", "b"}, 20},
		{[]string{"program", "sp ace", "hooks", "pre_start"}, 22},
		{[]string{"program", "sp ace", "hooks", "pre_start", "timeout"}, 23},
		{[]string{"arr2"}, 25},
		{[]string{"arr2", "k"}, 26},
		{[]string{"arr2", "esc"}, 29},
		{[]string{"arr2", "kéy"}, 30},
		// Fallbacks: an element index is skipped, an unknown key takes its
		// nearest known parent, and nothing known gives 0.
		{[]string{"program", "web", "env", "[3]"}, 17},
		{[]string{"program", "web", "nope"}, 15},
		{[]string{"fake", "table"}, 0},
		{[]string{"key"}, 0},
	}
	for _, tt := range tests {
		if got := ix.line(tt.path); got != tt.line {
			t.Errorf("line(%q) = %d, want %d", tt.path, got, tt.line)
		}
	}
	// Every key toml reports has a line of its own.
	var v map[string]any
	md, err := toml.Decode(doc, &v)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range md.Keys() {
		if _, ok := ix[lineKey(k)]; !ok {
			t.Errorf("no line for key %q", []string(k))
		}
	}
}
