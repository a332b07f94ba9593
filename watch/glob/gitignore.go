package glob

import (
	"path"
	"strings"
)

// maxIgnoreRules bounds the rules read from one ignore file: a hostile or
// generated file must not make every event cost a long scan.
const maxIgnoreRules = 10000

// Ignore is the rules of one .gitignore file, matched against paths
// relative to its folder. The subset of gitignore(5) it follows:
//
//   - blank lines and "#" comments are skipped; "\#" and "\!" start a
//     pattern with a literal '#' or '!'; trailing spaces are dropped
//     unless escaped;
//   - "!" negates: a later rule un-ignores what an earlier one ignored,
//     the last matching rule wins, and nothing under an ignored folder
//     comes back (git does not look inside it either);
//   - a trailing "/" matches folders only;
//   - a "/" at the start or in the middle anchors the pattern at the
//     file's folder; without one it matches a name at any depth;
//   - "*", "?", "[a-z]" work within one name; "**" as a whole name spans
//     any number of folders ("a/**/b", "**/x", and "x/**" for everything
//     inside x).
//
// Not followed: .gitignore files in subfolders, .git/info/exclude and
// core.excludesFile. A malformed pattern is skipped, as git skips it.
type Ignore struct {
	rules []ignoreRule
}

type ignoreRule struct {
	elems   []string // path.Match patterns, or "**"
	negate  bool
	dirOnly bool
}

// ParseIgnore reads the text of a .gitignore file.
func ParseIgnore(text string) *Ignore {
	ig := &Ignore{}
	for line := range strings.SplitSeq(text, "\n") {
		if len(ig.rules) == maxIgnoreRules {
			break
		}
		if r, ok := ignoreLine(line); ok {
			ig.rules = append(ig.rules, r)
		}
	}
	return ig
}

func ignoreLine(line string) (ignoreRule, bool) {
	var r ignoreRule
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces go unless the last one is escaped.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	switch {
	case line == "" || line[0] == '#':
		return r, false
	case line[0] == '!':
		r.negate = true
		line = line[1:]
	case strings.HasPrefix(line, `\#`) || strings.HasPrefix(line, `\!`):
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimLeft(line, "/")
	if line == "" {
		return r, false
	}
	if !anchored {
		r.elems = append(r.elems, "**")
	}
	for e := range strings.SplitSeq(line, "/") {
		if e == "" {
			continue
		}
		if e != "**" {
			if _, err := path.Match(e, ""); err != nil {
				return r, false
			}
		} else if n := len(r.elems); n > 0 && r.elems[n-1] == "**" {
			continue
		}
		r.elems = append(r.elems, e)
	}
	// "x/**" is everything inside x, not x itself: at least one name.
	if n := len(r.elems); n > 1 && r.elems[n-1] == "**" {
		r.elems = append(r.elems[:n-1], "*", "**")
	}
	return r, true
}

// Match reports whether rel (slash-separated, relative to the file's
// folder) is ignored: it, or a folder it is in. isDir says whether rel
// itself is a folder.
func (ig *Ignore) Match(rel string, isDir bool) bool {
	if ig == nil || len(ig.rules) == 0 {
		return false
	}
	var names []string
	for e := range strings.SplitSeq(rel, "/") {
		if e != "" && e != "." {
			names = append(names, e)
		}
	}
	for i := 1; i <= len(names); i++ {
		if ig.matchExact(names[:i], i < len(names) || isDir) {
			return true
		}
	}
	return false
}

// matchExact applies the rules to one path: the last one that matches
// decides.
func (ig *Ignore) matchExact(names []string, isDir bool) bool {
	ignored := false
	for _, r := range ig.rules {
		if r.negate == ignored && (!r.dirOnly || isDir) && matchElems(r.elems, names) {
			ignored = !r.negate
		}
	}
	return ignored
}
