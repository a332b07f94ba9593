// Package export translates a supervise config into what another engine
// runs: systemd units for a host, Kubernetes workloads for a cluster.
// Every config key is either mapped or
// produces a Warning naming the program, the key and why; nothing is
// dropped silently.
package export

import (
	"fmt"
	"sort"
	"strings"
)

// Warning is a key the target cannot express as supervise does.
type Warning struct {
	Program string // "" for the whole config
	Key     string
	Why     string
}

func (w Warning) String() string {
	if w.Program == "" {
		return fmt.Sprintf("%s: %s", w.Key, w.Why)
	}
	return fmt.Sprintf("program %s: %s: %s", w.Program, w.Key, w.Why)
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
