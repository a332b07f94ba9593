package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// http_token_file: a private regular file is read; one others may read, a
// symlink, a directory, a short or missing token is refused with the file
// and line of the key.
func TestHTTPTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "  0123456789abcdef0123\n", 0o600)
	parse := func(path string) (*Config, error) {
		return Parse("/etc/sv/test.toml", []byte("[supervisor]\nhttp_token_file = \""+path+"\"\n[program.w]\ncommand = \"w\"\n"))
	}
	cfg, err := parse(good)
	if err != nil || cfg.Supervisor.HTTPTokenFile != good {
		t.Fatalf("a private token file: %v", err)
	}
	if tok, err := ReadTokenFile(good); err != nil || tok != "0123456789abcdef0123" {
		t.Errorf("ReadTokenFile = %q, %v", tok, err)
	}
	other := write("other", "0123456789abcdef0123", 0o600)
	if err := os.Lchown(other, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{write("group", "0123456789abcdef0123", 0o640), "has mode 0640: others can read the token"},
		{write("world", "0123456789abcdef0123", 0o644), "has mode 0644"},
		{link, "is a symlink"},
		{other, "is owned by uid 12345"},
		{dir, "is not a regular file"},
		{write("short", "abc\n", 0o600), "a token of 3 bytes"},
		{write("words", "0123456789abcdef 0123\n", 0o600), "more than one word"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		_, err := parse(tc.path)
		if err == nil || !strings.Contains(err.Error(), "test.toml:2: supervisor.http_token_file: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want test.toml:2 … %q", filepath.Base(tc.path), err, tc.want)
		}
	}
}
