package proc

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
)

// identity is a resolved user, group and supplementary groups.
type identity struct {
	set    bool // false: keep the caller's identity
	uid    uint32
	gid    uint32
	groups []uint32
}

// accounts looks users and groups up: os/user on the system (the C
// library's NSS with cgo, so LDAP and sssd users resolve; /etc/passwd and
// /etc/group without), a map in tests.
type accounts interface {
	lookupUser(name string) (*user.User, error)
	lookupUserID(uid string) (*user.User, error)
	lookupGroup(name string) (*user.Group, error)
	groupIDs(u *user.User) ([]string, error)
}

type systemAccounts struct{}

func (systemAccounts) lookupUser(name string) (*user.User, error)   { return user.Lookup(name) }
func (systemAccounts) lookupUserID(uid string) (*user.User, error)  { return user.LookupId(uid) }
func (systemAccounts) lookupGroup(name string) (*user.Group, error) { return user.LookupGroup(name) }
func (systemAccounts) groupIDs(u *user.User) ([]string, error)      { return u.GroupIds() }

// resolveIdentity turns user, group and groups (names or numbers) into ids.
// A numeric user need not exist, but then a group must be given: guessing a
// primary group would be surprising.
func resolveIdentity(db accounts, usr, group string, groups []string) (identity, error) {
	if usr == "" && group == "" && len(groups) == 0 {
		return identity{}, nil
	}
	// Without a user, keep uid 0 (ours: only root may change identity).
	var u *user.User
	acct := account{}
	if usr != "" {
		var err error
		if u, acct, err = lookupAccount(db, usr); err != nil {
			return identity{}, err
		}
	}
	id := identity{set: true, uid: acct.uid, gid: acct.gid}
	haveGid := acct.haveGid
	if group != "" {
		gid, err := lookupGroup(db, group)
		if err != nil {
			return identity{}, err
		}
		id.gid, haveGid = gid, true
	}
	if usr != "" && !haveGid {
		return identity{}, fmt.Errorf("user %s: no such account; give a group as well", usr)
	}
	var err error
	id.groups, err = supplementaryGroups(db, u, id.gid, groups)
	if err != nil {
		return identity{}, err
	}
	return id, nil
}

// account is what a user name or number resolves to.
type account struct {
	uid, gid uint32
	haveGid  bool // false: a uid without an account
}

// lookupAccount resolves a user name or number; the user is nil for a
// numeric uid without an account, which is allowed (with a group).
func lookupAccount(db accounts, usr string) (*user.User, account, error) {
	if !isNumber(usr) {
		u, err := db.lookupUser(usr)
		var unknown user.UnknownUserError
		switch {
		case errors.As(err, &unknown):
			return nil, account{}, fmt.Errorf("user %q: no such user", usr)
		case err != nil:
			return nil, account{}, fmt.Errorf("user %q: %w", usr, err)
		}
		return u, account{uid: atou32(u.Uid), gid: atou32(u.Gid), haveGid: true}, nil
	}
	u, err := db.lookupUserID(usr)
	var unknown user.UnknownUserIdError
	switch {
	case err == nil:
		return u, account{uid: atou32(usr), gid: atou32(u.Gid), haveGid: true}, nil
	case errors.As(err, &unknown):
		return nil, account{uid: atou32(usr)}, nil
	}
	return nil, account{}, fmt.Errorf("user %s: %w", usr, err)
}

// supplementaryGroups resolves the groups given or, without any, the
// user's own groups but its primary one, as initgroups(3) does.
func supplementaryGroups(db accounts, u *user.User, primary uint32, groups []string) ([]uint32, error) {
	var out []uint32
	if len(groups) > 0 {
		for _, g := range groups {
			gid, err := lookupGroup(db, g)
			if err != nil {
				return nil, err
			}
			out = append(out, gid)
		}
		return out, nil
	}
	if u == nil {
		return nil, nil
	}
	gids, err := db.groupIDs(u)
	if err != nil {
		return nil, fmt.Errorf("user %q: listing its groups: %w", u.Username, err)
	}
	for _, g := range gids {
		if gid := atou32(g); isNumber(g) && gid != primary {
			out = append(out, gid)
		}
	}
	return out, nil
}

func lookupGroup(db accounts, g string) (uint32, error) {
	if isNumber(g) {
		return atou32(g), nil
	}
	grp, err := db.lookupGroup(g)
	var unknown user.UnknownGroupError
	switch {
	case errors.As(err, &unknown):
		return 0, fmt.Errorf("group %q: no such group", g)
	case err != nil:
		return 0, fmt.Errorf("group %q: %w", g, err)
	}
	return atou32(grp.Gid), nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

func atou32(s string) uint32 {
	n, _ := strconv.ParseUint(s, 10, 32)
	return uint32(n)
}
