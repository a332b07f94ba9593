//go:build linux

package proc

import (
	"os/user"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fakeAccounts is an account database in memory: users by name with their
// groups, groups by name.
type fakeAccounts struct {
	users  map[string]*user.User
	groups map[string]*user.Group
	member map[string][]string // username → gids, the primary one included, as os/user lists them
}

func testAccounts() fakeAccounts {
	return fakeAccounts{
		users: map[string]*user.User{
			"root": {Uid: "0", Gid: "0", Username: "root"},
			"web":  {Uid: "1000", Gid: "1001", Username: "web"},
		},
		groups: map[string]*user.Group{
			"root": {Gid: "0", Name: "root"}, "daemon": {Gid: "1", Name: "daemon"}, "webgrp": {Gid: "1001", Name: "webgrp"},
			"audio": {Gid: "29", Name: "audio"}, "video": {Gid: "44", Name: "video"},
		},
		member: map[string][]string{"web": {"1001", "1", "29"}, "root": {"0"}},
	}
}

func (f fakeAccounts) lookupUser(name string) (*user.User, error) {
	if u, ok := f.users[name]; ok {
		return u, nil
	}
	return nil, user.UnknownUserError(name)
}

func (f fakeAccounts) lookupUserID(uid string) (*user.User, error) {
	for _, u := range f.users {
		if u.Uid == uid {
			return u, nil
		}
	}
	n, _ := strconv.Atoi(uid)
	return nil, user.UnknownUserIdError(n)
}

func (f fakeAccounts) lookupGroup(name string) (*user.Group, error) {
	if g, ok := f.groups[name]; ok {
		return g, nil
	}
	return nil, user.UnknownGroupError(name)
}

func (f fakeAccounts) groupIDs(u *user.User) ([]string, error) { return f.member[u.Username], nil }

func TestResolveIdentity(t *testing.T) {
	db := testAccounts()
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
		{name: "group overrides", user: "web", group: "audio", want: identity{set: true, uid: 1000, gid: 29, groups: []uint32{1001, 1}}},
		{name: "explicit groups", user: "web", groups: []string{"video", "7"}, want: identity{set: true, uid: 1000, gid: 1001, groups: []uint32{44, 7}}},
		{name: "unknown number with group", user: "4242", group: "4243", want: identity{set: true, uid: 4242, gid: 4243}},
		{name: "group only", group: "webgrp", want: identity{set: true, uid: 0, gid: 1001}},
		{name: "unknown user", user: "nope", wantErr: `user "nope": no such user`},
		{name: "unknown number alone", user: "4242", wantErr: "give a group as well"},
		{name: "unknown group", user: "web", group: "nope", wantErr: `group "nope": no such group`},
		{name: "unknown supplementary", user: "web", groups: []string{"nope"}, wantErr: `group "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveIdentity(db, tc.user, tc.group, tc.groups)
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

// TestResolveIdentitySystem resolves through this machine's accounts, as
// supervise does: root and nobody exist on every Linux.
func TestResolveIdentitySystem(t *testing.T) {
	id, err := resolveIdentity(systemAccounts{}, "root", "", nil)
	if err != nil || !id.set || id.uid != 0 || id.gid != 0 {
		t.Fatalf("root: %+v %v", id, err)
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no nobody account: %v", err)
	}
	id, err = resolveIdentity(systemAccounts{}, "nobody", "", nil)
	if err != nil || id.uid != atou32(nobody.Uid) || id.gid != atou32(nobody.Gid) || slices.Contains(id.groups, id.gid) {
		t.Fatalf("nobody: %+v %v (account %+v)", id, err, nobody)
	}
	if _, err := resolveIdentity(systemAccounts{}, "no-such-user-here", "", nil); err == nil || !strings.Contains(err.Error(), "no such user") {
		t.Fatalf("unknown user: %v", err)
	}
	if _, err := resolveIdentity(systemAccounts{}, "root", "no-such-group-here", nil); err == nil || !strings.Contains(err.Error(), "no such group") {
		t.Fatalf("unknown group: %v", err)
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
