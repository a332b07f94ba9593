package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"python3 -m http.server 8080", []string{"python3", "-m", "http.server", "8080"}, ""},
		{"  a\t b\n c  ", []string{"a", "b", "c"}, ""},
		{"", nil, ""},
		{"   ", nil, ""},
		{`echo 'a b' "c d"`, []string{"echo", "a b", "c d"}, ""},
		{`echo 'it''s'`, []string{"echo", "its"}, ""},
		{`echo "it's"`, []string{"echo", "it's"}, ""},
		{`echo '$HOME | x'`, []string{"echo", "$HOME | x"}, ""},
		{`echo "a \"b\" \\ \$HOME \x"`, []string{"echo", `a "b" \ $HOME \x`}, ""},
		{`a\ b c\"d`, []string{"a b", `c"d`}, ""},
		{"a \\\nb", []string{"a", "b"}, ""},
		{"\"a\\\nb\"", []string{"ab"}, ""},
		{`x "" ''`, []string{"x", "", ""}, ""},
		{`--opt=a"b c"d`, []string{"--opt=ab cd"}, ""},
		{`a#b "#" '#'`, []string{"a#b", "#", "#"}, ""},
		{`sh -c 'echo $PORT && exit 1'`, []string{"sh", "-c", "echo $PORT && exit 1"}, ""},
		{`echo 'unbalanced`, nil, "unbalanced ' (single quote)"},
		{`echo "unbalanced`, nil, `unbalanced " (double quote)`},
		{`echo "esc\"`, nil, `unbalanced "`},
		{`echo \`, nil, `ends with a lone \`},
		{`a | b`, nil, `unquoted "|" needs a shell`},
		{`a && b`, nil, `unquoted "&"`},
		{`a; b`, nil, `unquoted ";"`},
		{`a > f`, nil, `unquoted ">"`},
		{`a < f`, nil, `unquoted "<"`},
		{`echo $HOME`, nil, `unquoted "$"`},
		{"echo `date`", nil, "unquoted \"`\""},
		{`(a)`, nil, `unquoted "("`},
		{`a # comment`, nil, `unquoted "#"`},
	}
	for _, tt := range tests {
		got, err := SplitCommand(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("SplitCommand(%q) = %q, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// The error for a shell construct says how to run it through a shell.
func TestSplitCommandSuggestsShell(t *testing.T) {
	_, err := SplitCommand(`echo $HOME | wc -c`)
	want := `unquoted "$" needs a shell, and commands run without one: quote it, or write command = ["sh", "-c", "echo $HOME | wc -c"]`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
