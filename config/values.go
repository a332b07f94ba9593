package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/supervise-dev/supervise/internal/size"
)

// ParseSize reads a byte size: a plain integer ("1048576"), or a number with
// a unit, case-insensitive: B; K, M, G, T and KiB, MiB, GiB, TiB are powers
// of 1024; KB, MB, GB, TB are powers of 1000 (package internal/size).
func ParseSize(s string) (int64, error) { return size.Parse(s) }

// parseDuration reads a Go duration ("10s", "1m30s", "250ms"); negative
// durations mean nothing anywhere in the file.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: want a Go duration like \"10s\", \"1m30s\" or \"250ms\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative (got %q)", s)
	}
	return d, nil
}

// parseUmask reads an octal umask: "0022", "022" or "0o022".
func parseUmask(s string) (int, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0o"), "0O")
	n, err := strconv.ParseUint(t, 8, 32)
	if err != nil || n > 0o777 || t == "" {
		return 0, fmt.Errorf("%q is not an octal umask between 0000 and 0777 (like \"0022\")", s)
	}
	return int(n), nil
}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`) })

// validName reports why name cannot name a program, or nil.
func validName(name string) error {
	if nameRE().MatchString(name) {
		return nil
	}
	if strings.Contains(name, ":") {
		return errors.New(`must not contain ":", which separates the instance number ("web:2")`)
	}
	return fmt.Errorf("invalid program name %q: use 1-63 letters, digits, '_', '-' or '.', starting with a letter or digit", name)
}

var envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// expandEnv expands a TOML env value from lookup with docker compose's
// forms (expand.go): ${NAME}, ${NAME:-default} and the others, nested; $$
// is a literal $. A $ before anything but { or $ stays as it is, so a
// value like "pa$word" needs no escaping; a ${ that starts no reference is
// an error.
func expandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	ex := &expander{lookup: lookup, strict: true}
	return ex.expand(s)
}

// rlimitResources are the rlimits a program may set, by TOML name.
var rlimitResources = map[string]struct {
	bytes bool // a size string is accepted
}{
	"as": {true}, "core": {true}, "cpu": {}, "data": {true}, "fsize": {true},
	"locks": {}, "memlock": {true}, "msgqueue": {true}, "nice": {}, "nofile": {},
	"nproc": {}, "rss": {true}, "rtprio": {}, "rttime": {}, "sigpending": {},
	"stack": {true},
}

var namespaces = []string{"pid", "mount", "uts", "ipc", "net", "user"}
