package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// identity is a resolved user, group and supplementary groups.
type identity struct {
	set    bool // false: keep the caller's identity
	uid    uint32
	gid    uint32
	groups []uint32
}

// idFiles are the account databases; tests point them elsewhere.
type idFiles struct {
	passwd, group string
}

var systemIDFiles = idFiles{passwd: "/etc/passwd", group: "/etc/group"}

type passwdEntry struct {
	name     string
	uid, gid uint32
}

type groupEntry struct {
	name    string
	gid     uint32
	members []string
}

// parsePasswd reads passwd(5) lines: name:password:uid:gid:gecos:home:shell.
func parsePasswd(r io.Reader) ([]passwdEntry, error) {
	var out []passwdEntry
	err := scanColon(r, 7, func(f []string) {
		uid, err1 := strconv.ParseUint(f[2], 10, 32)
		gid, err2 := strconv.ParseUint(f[3], 10, 32)
		if err1 == nil && err2 == nil {
			out = append(out, passwdEntry{name: f[0], uid: uint32(uid), gid: uint32(gid)})
		}
	})
	return out, err
}

// parseGroup reads group(5) lines: name:password:gid:member,member.
func parseGroup(r io.Reader) ([]groupEntry, error) {
	var out []groupEntry
	err := scanColon(r, 4, func(f []string) {
		gid, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return
		}
		var members []string
		for m := range strings.SplitSeq(f[3], ",") {
			if m = strings.TrimSpace(m); m != "" {
				members = append(members, m)
			}
		}
		out = append(out, groupEntry{name: f[0], gid: uint32(gid), members: members})
	})
	return out, err
}

// scanColon calls f with the fields of every well-formed line; comments,
// blank lines, NIS "+"/"-" entries and short lines are skipped.
func scanColon(r io.Reader, n int, f func([]string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
			continue
		}
		fields := strings.Split(line, ":")
		if len(fields) < n {
			continue
		}
		f(fields)
	}
	return sc.Err()
}

func readPasswd(path string) ([]passwdEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parsePasswd(f)
}

func readGroup(path string) ([]groupEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseGroup(f)
}

// resolveIdentity turns user, group and groups (names or numbers) into ids.
// A numeric user need not exist in passwd, but then a group must be given:
// guessing a primary group would be surprising.
func resolveIdentity(files idFiles, user, group string, groups []string) (identity, error) {
	if user == "" && group == "" && len(groups) == 0 {
		return identity{}, nil
	}
	var id identity
	id.set = true
	var users []passwdEntry
	var grps []groupEntry
	var err error
	needPasswd := user != "" && !isNumber(user) || user != "" && group == ""
	if needPasswd {
		if users, err = readPasswd(files.passwd); err != nil && !(isNumber(user) && os.IsNotExist(err)) {
			return identity{}, fmt.Errorf("reading users: %w", err)
		}
	}
	needGroup := group != "" && !isNumber(group) || user != "" && len(groups) == 0
	for _, g := range groups {
		needGroup = needGroup || !isNumber(g)
	}
	if needGroup {
		if grps, err = readGroup(files.group); err != nil && !os.IsNotExist(err) {
			return identity{}, fmt.Errorf("reading groups: %w", err)
		}
	}

	userName := ""
	haveGid := false
	switch {
	case user == "":
		// keep uid 0 (ours: only root may change identity)
	case isNumber(user):
		id.uid = atou32(user)
		for _, u := range users {
			if u.uid == id.uid {
				id.gid, haveGid, userName = u.gid, true, u.name
				break
			}
		}
	default:
		found := false
		for _, u := range users {
			if u.name == user {
				id.uid, id.gid, haveGid, userName, found = u.uid, u.gid, true, u.name, true
				break
			}
		}
		if !found {
			return identity{}, fmt.Errorf("user %q: no such user in %s", user, files.passwd)
		}
	}
	if group != "" {
		gid, err := lookupGroup(grps, group, files.group)
		if err != nil {
			return identity{}, err
		}
		id.gid, haveGid = gid, true
	}
	if user != "" && !haveGid {
		return identity{}, fmt.Errorf("user %s: not in %s; give a group as well", user, files.passwd)
	}
	switch {
	case len(groups) > 0:
		for _, g := range groups {
			gid, err := lookupGroup(grps, g, files.group)
			if err != nil {
				return identity{}, err
			}
			id.groups = append(id.groups, gid)
		}
	case userName != "":
		// As initgroups(3): the groups that list the user as a member.
		for _, g := range grps {
			for _, m := range g.members {
				if m == userName && g.gid != id.gid {
					id.groups = append(id.groups, g.gid)
				}
			}
		}
	}
	return id, nil
}

func lookupGroup(grps []groupEntry, g, file string) (uint32, error) {
	if isNumber(g) {
		return atou32(g), nil
	}
	for _, e := range grps {
		if e.name == g {
			return e.gid, nil
		}
	}
	return 0, fmt.Errorf("group %q: no such group in %s", g, file)
}

func isNumber(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

func atou32(s string) uint32 {
	n, _ := strconv.ParseUint(s, 10, 32)
	return uint32(n)
}
