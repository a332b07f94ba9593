package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"0", 0, ""},
		{"1048576", 1 << 20, ""},
		{"512k", 512 << 10, ""},
		{"512K", 512 << 10, ""},
		{"512KiB", 512 << 10, ""},
		{"512KB", 512000, ""},
		{"256MiB", 256 << 20, ""},
		{"256 MiB", 256 << 20, ""},
		{"1G", 1 << 30, ""},
		{"1gb", 1e9, ""},
		{"1.5GiB", 3 << 29, ""},
		{"2T", 2 << 40, ""},
		{"100B", 100, ""},
		{" 7 ", 7, ""},
		{"", 0, "is not a size"},
		{"MiB", 0, "is not a size"},
		{"-1", 0, "is not a size"},
		{"1.5", 0, "not a whole number of bytes"},
		{"1.2.3M", 0, "is not a size"},
		{"12 parsecs", 0, `unknown size unit "parsecs"`},
		{"99999999999999999999", 0, "not a whole number"},
		{"9999999999T", 0, "too large"},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseSize(%q) = %d, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"10s": 10 * time.Second, "1m30s": 90 * time.Second, "0s": 0, "0": 0, "250ms": 250 * time.Millisecond} {
		if got, err := parseDuration(in); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"10", "-1s", "soon", "", "1 minute"} {
		if got, err := parseDuration(in); err == nil {
			t.Errorf("parseDuration(%q) = %v, want an error", in, got)
		}
	}
}

func TestParseUmask(t *testing.T) {
	for in, want := range map[string]int{"0022": 0o22, "022": 0o22, "0o027": 0o27, "777": 0o777, "0": 0} {
		if got, err := parseUmask(in); err != nil || got != want {
			t.Errorf("parseUmask(%q) = %#o, %v; want %#o", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0999", "1000", "0o", "abc", "-1"} {
		if got, err := parseUmask(in); err == nil {
			t.Errorf("parseUmask(%q) = %#o, want an error", in, got)
		}
	}
}

func TestExpandEnv(t *testing.T) {
	lookup := env("HOME", "/home/me", "EMPTY", "", "X", "x")
	tests := []struct {
		in, want, wantErr string
	}{
		{"plain", "plain", ""},
		{"${HOME}/bin", "/home/me/bin", ""},
		{"${UNSET}", "", ""},
		{"${UNSET:-def}", "def", ""},
		{"${EMPTY:-def}", "def", ""},
		{"${X:-def}", "x", ""},
		{"${UNSET:-}", "", ""},
		{"$$HOME", "$HOME", ""},
		{"$$", "$", ""},
		{"pa$word", "pa$word", ""},
		{"$HOME", "$HOME", ""},
		{"trailing $", "trailing $", ""},
		{"${X}${X}$${X}", "xx${X}", ""},
		{"${", "", "unterminated"},
		{"${HOME", "", "unterminated"},
		{"${}", "", "invalid variable reference"},
		{"${A B}", "", "invalid variable reference"},
		{"${A-B}", "B", ""},
		{"${X-B}", "x", ""},
	}
	for _, tt := range tests {
		got, err := expandEnv(tt.in, lookup)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("expandEnv(%q) = %q, %v; want error %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("expandEnv(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestValidName(t *testing.T) {
	for _, n := range []string{"web", "a", "web-1", "web_1", "api.v2", "0x", strings.Repeat("a", 63)} {
		if err := validName(n); err != nil {
			t.Errorf("validName(%q) = %v, want nil", n, err)
		}
	}
	for _, n := range []string{"", "web:1", "-x", ".x", "a b", "a/b", "ü", strings.Repeat("a", 64)} {
		if err := validName(n); err == nil {
			t.Errorf("validName(%q) = nil, want an error", n)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "s.toml", Line: 12, Key: "program.web.restart", Msg: "bad"}, "s.toml:12: program.web.restart: bad"},
		{Error{File: "s.toml", Line: 3, Msg: "syntax"}, "s.toml:3: syntax"},
		{Error{File: "s.toml", Key: "program", Msg: "none"}, "s.toml: program: none"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	list := ErrorList{&tests[0].e, &tests[1].e}
	if got, want := list.Error(), "s.toml:12: program.web.restart: bad\ns.toml:3: syntax"; got != want {
		t.Errorf("ErrorList.Error() = %q, want %q", got, want)
	}
}

func TestKeyString(t *testing.T) {
	tests := []struct {
		path []string
		want string
	}{
		{[]string{"program", "web", "restart"}, "program.web.restart"},
		{[]string{"program", "bad:name"}, `program."bad:name"`},
		{[]string{"program", "a", "depends_on", "[2]"}, "program.a.depends_on[2]"},
		{[]string{"env", ""}, `env.""`},
		{[]string{"env", "é"}, `env."é"`},
	}
	for _, tt := range tests {
		if got := keyString(tt.path); got != tt.want {
			t.Errorf("keyString(%q) = %s, want %s", tt.path, got, tt.want)
		}
	}
}
