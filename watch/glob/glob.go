// Package glob matches slash-separated paths against patterns with "**".
// It is a leaf (standard library only) so that config can check the
// patterns watch will use with the very code that will use them.
package glob

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Glob is a compiled path pattern, matched against slash-separated paths
// relative to a watched directory:
//
//   - "**" as a whole element matches any number of elements, none
//     included ("src/**/*.go" matches src/a.go and src/x/y/a.go);
//   - inside an element, *, ?, [a-z] and \ escapes work as in path.Match
//     (so * never crosses a '/');
//   - a pattern without a '/' matches an element at any depth ("*.go",
//     "node_modules"); one with a '/' is anchored at the watched directory
//     ("build/gen", "/dist" — a leading "/" or "./" only anchors; a trailing
//     "/" is ignored);
//   - a pattern that matches a directory matches everything under it, so
//     excluding "vendor" excludes vendor/a/b.go and is never descended into.
//
// A Glob is immutable and safe for concurrent use.
type Glob struct {
	pattern string
	elems   []string // path.Match patterns, or "**"
}

// Compile checks pattern and compiles it. The error says what is wrong
// with the pattern; it does not repeat the pattern.
func Compile(pattern string) (*Glob, error) {
	p := strings.TrimSuffix(pattern, "/")
	anchored := strings.Contains(p, "/")
	p = strings.TrimPrefix(p, "./")
	p = strings.TrimLeft(p, "/")
	var elems []string
	for e := range strings.SplitSeq(p, "/") {
		switch e {
		case "", ".":
			continue
		case "..":
			return nil, errors.New(`".." cannot match a path inside the watched directory`)
		}
		if e != "**" {
			if _, err := path.Match(e, ""); err != nil {
				return nil, fmt.Errorf("malformed pattern element %q (check [ ] and \\)", e)
			}
		}
		elems = append(elems, e)
	}
	if len(elems) == 0 {
		return nil, errors.New("empty pattern")
	}
	if !anchored {
		elems = append([]string{"**"}, elems...)
	}
	elems = append(elems, "**") // a match of a directory covers its subtree
	// "**/**" is "**": collapsing keeps the matcher's backtracking short.
	out := elems[:1]
	for _, e := range elems[1:] {
		if e == "**" && out[len(out)-1] == "**" {
			continue
		}
		out = append(out, e)
	}
	return &Glob{pattern: pattern, elems: out}, nil
}

// MustCompile is Compile for patterns known to be good; it panics
// on a bad one.
func MustCompile(pattern string) *Glob {
	g, err := Compile(pattern)
	if err != nil {
		panic(fmt.Sprintf("glob %q: %v", pattern, err))
	}
	return g
}

// String returns the pattern as it was written.
func (g *Glob) String() string { return g.pattern }

// Match reports whether rel, a slash-separated path relative to the watched
// directory ("src/main.go"), or one of its parent directories matches.
// "." and "" are the watched directory itself, which no pattern matches.
func (g *Glob) Match(rel string) bool {
	var names []string
	for e := range strings.SplitSeq(rel, "/") {
		if e != "" && e != "." {
			names = append(names, e)
		}
	}
	if len(names) == 0 {
		return false
	}
	return matchElems(g.elems, names)
}

// matchElems is the classic one-wildcard matcher over path elements: "**"
// takes any run of names; on a mismatch it gives the last "**" one more
// name and tries again. Linear unless patterns stack many "**".
func matchElems(pat, names []string) bool {
	pi, ni := 0, 0
	star, starNi := -1, 0
	for ni < len(names) {
		switch {
		case pi < len(pat) && pat[pi] == "**":
			star, starNi = pi, ni
			pi++
		case pi < len(pat) && matchElem(pat[pi], names[ni]):
			pi++
			ni++
		case star >= 0:
			starNi++
			pi, ni = star+1, starNi
		default:
			return false
		}
	}
	for pi < len(pat) && pat[pi] == "**" {
		pi++
	}
	return pi == len(pat)
}

func matchElem(pattern, name string) bool {
	ok, _ := path.Match(pattern, name) // validated by Compile
	return ok
}
