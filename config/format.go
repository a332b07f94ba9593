package config

import (
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// fileFormat decides how Load reads a file, a Procfile or TOML, and says
// why, for the error of a file that turns out not to be what was tried:
// a name ending in .toml is TOML; Procfile, Procfile.dev, Procfile-dev,
// dev.procfile (any case) are Procfiles; any other name is read by its
// first line that is not blank or a comment: "name: command" is a
// Procfile, anything else TOML.
func fileFormat(path string, data []byte) (procfile bool, why string) {
	base := strings.ToLower(filepath.Base(path))
	switch {
	case strings.HasSuffix(base, ".toml"):
		return false, "its name ends in .toml"
	case strings.HasPrefix(base, "procfile") || strings.HasSuffix(base, ".procfile"):
		return true, "its name says Procfile"
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if procfileLineRE().MatchString(line) {
			return true, `its first line is "name: command"`
		}
		return false, `its first line is not "name: command"`
	}
	return false, "it has no Procfile lines"
}

// procfileLineRE is a Procfile line's start: a process type name, then ':'.
var procfileLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*[ \t]*:`) })

// triedAs adds to a syntax error of a file how it was read and why, so
// that a Procfile taken for TOML (or the reverse) says so.
func triedAs(err error, format, why string) error {
	list, ok := err.(ErrorList)
	if !ok || len(list) == 0 {
		return err
	}
	e := *list[0]
	e.Msg += " (read as " + format + ": " + why + ")"
	out := append(ErrorList{&e}, list[1:]...)
	return out
}

// validTOML reports whether data is TOML at all (whatever its keys). A
// file past the bounds counts as TOML: Parse has refused it for that
// already, and it must never reach the decoder, whose cost past them is
// gigabytes.
func validTOML(file string, data []byte) bool {
	if checkSize(file, data) != nil || checkTOMLBounds(file, data) != nil {
		return true
	}
	var raw map[string]any
	_, err := toml.Decode(string(data), &raw)
	return err == nil
}
