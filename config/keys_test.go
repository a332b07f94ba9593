package config

import (
	"slices"
	"strings"
	"testing"
)

// TestKeysAreTheRows checks Keys against the rows it is read from: every
// row of every table is a key, and the file's spelling of a few is there.
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
	for _, tb := range keyTables() {
		for _, name := range tb.names {
			if !slices.Contains(keys, tb.path+"."+name) {
				t.Errorf("Keys lacks the row %s of %s", name, tb.path)
			}
		}
	}
	for _, k := range keys {
		if strings.Contains(k, "..") || strings.HasSuffix(k, ".") {
			t.Errorf("malformed key %q", k)
		}
	}
}
