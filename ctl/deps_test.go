package ctl

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps ctl a leaf of the standard library, x/sys/unix and logs:
// the supervisor imports ctl, and supervisectl links only ctl.
func TestDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies")
	}
	out, err := exec.Command(goBin, "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{
		"golang.org/x/sys/unix":                   true,
		"github.com/supervise-dev/supervise/logs": true,
	}
	for _, imp := range strings.Fields(string(out)) {
		if first, _, _ := strings.Cut(imp, "/"); !strings.Contains(first, ".") {
			continue // standard library
		}
		if !allowed[imp] {
			t.Errorf("ctl imports %s: only the standard library, golang.org/x/sys/unix and logs are allowed", imp)
		}
	}
	// Transitively, nothing of the supervisor, the runtime or the CLI.
	out, err = exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	bad := map[string]string{
		"github.com/supervise-dev/supervise/supervisor": "the supervisor implements ctl.Backend, not the reverse",
		"github.com/supervise-dev/supervise/proc":       "supervisectl must not link the sandbox runtime",
		"github.com/supervise-dev/supervise/config":     "the protocol knows nothing of config files",
		"github.com/urfave/cli/v2":                      "the CLI lives in cmd/supervise",
	}
	for _, dep := range strings.Fields(string(out)) {
		if why, ok := bad[dep]; ok {
			t.Errorf("ctl depends on %s: %s", dep, why)
		}
	}
}
