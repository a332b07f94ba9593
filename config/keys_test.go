package config

import (
	"slices"
	"strings"
	"testing"
)

// TestKeysAreTheRows checks Keys' spelling of a key of each kind of table:
// a fixed table, a nested one, one under a name the file chooses, one of
// each hook and probe.
func TestKeysAreTheRows(t *testing.T) {
	keys := Keys()
	if !slices.IsSorted(keys) {
		t.Error("Keys is not sorted")
	}
	for _, want := range []string{
		"supervisor.socket",
		"program.*.stop_timeout",
		"program.*.sandbox.rlimits.nofile",
		"program.*.sandbox.rlimits.*.soft",
		"program.*.hooks.post_stop",
		"program.*.hooks.pre_start.http.expect_status",
		"program.*.probes.liveness.termination_grace_period",
		"program.*.depends_on.*.restart_with",
		"program.*.restart_rules.*.exit_codes.values",
		"program.*.stderr.max_files",
		"procfile.formation",
	} {
		if !slices.Contains(keys, want) {
			t.Errorf("Keys lacks %s", want)
		}
	}
	for _, k := range keys {
		if strings.Contains(k, "..") || strings.HasSuffix(k, ".") {
			t.Errorf("malformed key %q", k)
		}
	}
}
