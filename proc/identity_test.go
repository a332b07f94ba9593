//go:build linux

package proc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const testPasswd = `root:x:0:0:root:/root:/bin/bash
# a comment
+nis
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
web:x:1000:1001:Web:/home/web:/bin/sh
broken:x:abc:1:::
short:x:5
`

const testGroup = `root:x:0:
daemon:x:1:web
webgrp:x:1001:
audio:x:29:web, other
video:x:44:other
`

func writeIDFiles(t *testing.T) idFiles {
	t.Helper()
	dir := t.TempDir()
	f := idFiles{passwd: filepath.Join(dir, "passwd"), group: filepath.Join(dir, "group")}
	if err := os.WriteFile(f.passwd, []byte(testPasswd), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.group, []byte(testGroup), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestResolveIdentity(t *testing.T) {
	files := writeIDFiles(t)
	for _, tc := range []struct {
		name        string
		user, group string
		groups      []string
		want        identity
		wantErr     string
	}{
		{name: "nothing", want: identity{}},
		{name: "user by name takes its groups", user: "web", want: identity{set: true, uid: 1000, gid: 1001, groups: []uint32{1, 29}}},
		{name: "user by number found", user: "1000", want: identity{set: true, uid: 1000, gid: 1001, groups: []uint32{1, 29}}},
		{name: "group overrides", user: "web", group: "audio", want: identity{set: true, uid: 1000, gid: 29, groups: []uint32{1}}},
		{name: "explicit groups", user: "web", groups: []string{"video", "7"}, want: identity{set: true, uid: 1000, gid: 1001, groups: []uint32{44, 7}}},
		{name: "unknown number with group", user: "4242", group: "4243", want: identity{set: true, uid: 4242, gid: 4243}},
		{name: "group only", group: "webgrp", want: identity{set: true, uid: 0, gid: 1001}},
		{name: "unknown user", user: "nope", wantErr: `user "nope": no such user`},
		{name: "unknown number alone", user: "4242", wantErr: "give a group as well"},
		{name: "unknown group", user: "web", group: "nope", wantErr: `group "nope": no such group`},
		{name: "unknown supplementary", user: "web", groups: []string{"nope"}, wantErr: `group "nope"`},
		{name: "malformed lines skipped", user: "broken", wantErr: "no such user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveIdentity(files, tc.user, tc.group, tc.groups)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.set != tc.want.set || got.uid != tc.want.uid || got.gid != tc.want.gid || !slices.Equal(got.groups, tc.want.groups) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestResolveRlimits(t *testing.T) {
	got, err := resolveRlimits([]Rlimit{{Name: "nofile", Soft: 1, Hard: 2}, {Name: "RLIMIT_CORE", Soft: 0, Hard: 0}, {Name: "Nproc", Soft: 5, Hard: ^uint64(0)}})
	if err != nil || len(got) != 3 {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []Rlimit{{Name: "files"}, {Name: "nofile", Soft: 3, Hard: 2}} {
		if _, err := resolveRlimits([]Rlimit{bad}); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "prog")
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "data"), nil, 0o644)
	for _, tc := range []struct {
		file, dir string
		env       []string
		want      string
		wantErr   string
	}{
		{file: "prog", env: []string{"PATH=/nonexistent:" + dir}, want: exe},
		{file: "prog", env: nil, wantErr: `exec "prog": executable file not found in $PATH`},
		{file: "data", env: []string{"PATH=" + dir}, wantErr: "executable file not found"},
		{file: exe, want: exe},
		{file: "./prog", dir: dir, want: "./prog"},
		{file: "./data", dir: dir, wantErr: "permission denied"},
		{file: "sh", env: []string{"FOO=1"}, want: "/usr/local/sbin/sh|/usr/local/bin/sh|/usr/sbin/sh|/usr/bin/sh|/sbin/sh|/bin/sh"},
	} {
		got, err := lookPath(tc.file, tc.env, tc.dir)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("lookPath(%q): %v, want error %q", tc.file, err, tc.wantErr)
			}
		case err != nil || !slices.Contains(strings.Split(tc.want, "|"), got):
			t.Errorf("lookPath(%q) = %q, %v; want %q", tc.file, got, err, tc.want)
		}
	}
}
