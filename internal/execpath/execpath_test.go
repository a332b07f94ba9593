package execpath

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLook(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "prog")
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "data"), nil, 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "data"), []byte("#!/bin/sh\n"), 0o755)
	for _, tc := range []struct {
		file, dir string
		env       []string
		want      string
		code      int
		wantErr   string
	}{
		{file: "prog", env: []string{"PATH=/nonexistent:" + dir}, want: exe},
		{file: "prog", env: []string{"PATH=/nope", "PATH=" + dir}, want: exe}, // the last PATH wins
		{file: "prog", env: nil, code: 127, wantErr: `exec "prog": executable file not found in $PATH`},
		// Found but not runnable: 126, unless a later directory has it.
		{file: "data", env: []string{"PATH=" + dir}, code: 126, wantErr: "permission denied"},
		{file: "data", env: []string{"PATH=" + dir + ":" + other}, want: filepath.Join(other, "data")},
		{file: "sub", env: []string{"PATH=" + dir}, code: 126, wantErr: "is a directory"},
		{file: exe, want: exe},
		{file: "./prog", dir: dir, want: "./prog"},
		{file: "./data", dir: dir, code: 126, wantErr: "permission denied"},
		{file: "./missing", dir: dir, code: 127, wantErr: "no such file or directory"},
		{file: "/no/such/dir/x", code: 127, wantErr: "no such file or directory"},
		{file: "", code: 127, wantErr: "no command"},
		{file: "sh", env: []string{"FOO=1"}, want: "/usr/local/sbin/sh|/usr/local/bin/sh|/usr/sbin/sh|/usr/bin/sh|/sbin/sh|/bin/sh"},
	} {
		got, err := Look(tc.file, tc.env, tc.dir)
		if tc.wantErr != "" {
			var ee *Error
			if !errors.As(err, &ee) || ee.Code != tc.code || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Look(%q, %v): %q, %v; want a %d error with %q", tc.file, tc.env, got, err, tc.code, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Contains(strings.Split(tc.want, "|"), got) {
			t.Errorf("Look(%q, %v) = %q, %v; want %q", tc.file, tc.env, got, err, tc.want)
		}
	}
}
