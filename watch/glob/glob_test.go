package glob

import (
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern string
		yes     []string
		no      []string
	}{
		{"*.go", []string{"main.go", "a/b/c.go", "cmd/x/main.go"}, []string{"main.go.orig", "main.c", "go", "."}},
		{"**/*.go", []string{"main.go", "a/b/c.go"}, []string{"a/b/c.gox"}},
		{"src/**/*.go", []string{"src/a.go", "src/x/y/a.go"}, []string{"a.go", "lib/src/a.go", "src/a.c", "srcx/a.go"}},
		{"src/*.go", []string{"src/a.go"}, []string{"src/x/a.go", "a.go"}},
		{"node_modules", []string{"node_modules", "node_modules/x/y.js", "web/node_modules/react/index.js"}, []string{"node_modules2/x", "my_node_modules"}},
		{"vendor/**", []string{"vendor/a.go", "vendor/x/y/z.go", "vendor"}, []string{"lib/vendor/a.go"}},
		{"/build", []string{"build", "build/out/a.o"}, []string{"x/build", "x/build/a.o"}},
		{"./build/", []string{"build/a"}, []string{"x/build/a"}},
		{"build/", []string{"build/a", "x/build/a"}, []string{"builder/a"}},
		{"a/**/b/**/c", []string{"a/b/c", "a/x/b/y/c", "a/x/y/b/c/d", "a/b/b/c"}, []string{"a/c", "a/b", "b/c"}},
		{"**", []string{"a", "a/b/c"}, []string{".", ""}},
		{"**/test/*_test.go", []string{"test/a_test.go", "x/test/a_test.go"}, []string{"test/x/a_test.go", "x/test/a.go"}},
		{"?.txt", []string{"a.txt", "d/b.txt"}, []string{"ab.txt", ".txt"}},
		{"[abc].log", []string{"a.log", "x/c.log"}, []string{"d.log"}},
		{`\*.md`, []string{"*.md"}, []string{"a.md"}},
		{".#*", []string{".#main.go", "x/.#y"}, []string{"main.go"}},
		{"*~", []string{"main.go~", "a/b~"}, []string{"main.go"}},
		{"4913", []string{"4913", "sub/4913"}, []string{"49131"}},
		{"a//b", []string{"a/b", "a/b/c"}, []string{"x/a/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			g, err := Compile(tt.pattern)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if g.String() != tt.pattern {
				t.Errorf("String() = %q", g.String())
			}
			for _, p := range tt.yes {
				if !g.Match(p) {
					t.Errorf("Match(%q) = false, want true", p)
				}
			}
			for _, p := range tt.no {
				if g.Match(p) {
					t.Errorf("Match(%q) = true, want false", p)
				}
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{"", "empty pattern"},
		{"/", "empty pattern"},
		{"./", "empty pattern"},
		{"[a-", "malformed pattern element"},
		{"src/[", "malformed pattern element"},
		{`x\`, "malformed pattern element"},
		{"../x", `".."`},
	}
	for _, tt := range tests {
		_, err := Compile(tt.pattern)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%q) = %v, want an error containing %q", tt.pattern, err, tt.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("MustCompile of a bad pattern did not panic")
		}
	}()
	MustCompile("[")
}

// A pathological pattern stays fast: the matcher backtracks per "**",
// not exponentially.
func TestGlobManyStars(t *testing.T) {
	g := MustCompile("a/**/a/**/a/**/a/**/a/**/b")
	name := strings.Repeat("a/", 200) + "c"
	if g.Match(name) {
		t.Errorf("matched %q", name)
	}
	if !g.Match(strings.Repeat("a/", 200) + "b") {
		t.Error("did not match a long path ending in b")
	}
}
