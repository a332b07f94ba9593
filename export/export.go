// Package export translates a supervise config into what another engine
// runs: systemd units for a host, Kubernetes workloads for a cluster.
// Every config key is either mapped or
// produces a Warning naming the program, the key and why; nothing is
// dropped silently.
package export

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/supervise-dev/supervise/config"
)

// Warning is a key the target cannot express as supervise does.
type Warning struct {
	Program string // "" for the whole config
	Key     string
	Why     string
}

// String is the warning as one line of text. The values in it are the
// config's, quoted where they are formatted; any control character that
// still reaches it is escaped as Go would, so that a value cannot start a
// line that looks like a warning of its own or move a terminal's cursor.
func (w Warning) String() string {
	if w.Program == "" {
		return escapeControls(fmt.Sprintf("%s: %s", w.Key, w.Why))
	}
	return escapeControls(fmt.Sprintf("program %s: %s: %s", w.Program, w.Key, w.Why))
}

// escapeControls escapes the C0 and C1 control characters, DEL and
// invalid UTF-8 in s, and keeps the rest as it is.
func escapeControls(s string) string {
	bad := func(r rune) bool { return r < 0x20 || r >= 0x7f && r < 0xa0 || r == utf8.RuneError }
	if !strings.ContainsFunc(s, bad) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if bad(r) {
			q := strconv.Quote(s[i : i+n])
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// File is one exported file: a name relative to the output directory.
type File struct {
	Name string
	Data []byte
}

type warnings []Warning

func (ws *warnings) add(program, key, format string, args ...any) {
	*ws = append(*ws, Warning{Program: program, Key: key, Why: fmt.Sprintf(format, args...)})
}

// ownSettings warns about each [supervisor] key set away from its default
// that configures supervise itself (its socket, logs, workers, limits):
// target runs the programs in its place and has no use for it.
func (ws *warnings) ownSettings(s config.Supervisor, target string) {
	for _, x := range []struct {
		key string
		set bool
	}{
		{"socket", s.Socket != ""},
		{"socket_group", s.SocketGroup != ""},
		{"workers", s.Workers != config.DefaultWorkers},
		{"shutdown_timeout", s.ShutdownTimeout != config.DefaultShutdownTimeout},
		{"log_format", s.LogFormat != config.DefaultLogFormat},
		{"log_level", s.LogLevel != config.DefaultLogLevel},
		{"log_ring", s.LogRing != config.DefaultLogRing},
		{"max_connections", s.MaxConnections != config.DefaultMaxConnections},
		{"max_followers", s.MaxFollowers != config.DefaultMaxFollowers},
		{"watch_config", !s.WatchConfig},
		{"probe_jitter", !s.ProbeJitter},
		{"strict_shutdown", s.StrictShutdown},
		{"http_token_file", s.HTTPTokenFile != ""},
	} {
		if x.set {
			ws.add("", "supervisor."+x.key, "not mapped: a setting of supervise itself, which %s replaces", target)
		}
	}
}

// outputSettings are a program's stdout and stderr by key; stderr has
// none of its own when it goes into stdout.
func outputSettings(p *config.Program) []struct {
	key string
	o   config.Output
} {
	out := []struct {
		key string
		o   config.Output
	}{{"stdout", p.Stdout}, {"stderr", p.Stderr}}
	if p.StderrToStdout {
		out = out[:1]
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// NamePart makes s usable in a unit, program or file name: letters,
// digits, '-', '_' and '.' stay, anything else becomes '-'.
func NamePart(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, s)
}
