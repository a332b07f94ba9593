package logs

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps logs a leaf: the standard library and x/sys/unix only.
// The supervisor and the control protocol both import it.
func TestDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies")
	}
	out, err := exec.Command(goBin, "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if first, _, _ := strings.Cut(imp, "/"); !strings.Contains(first, ".") {
			continue // standard library
		}
		if imp != "golang.org/x/sys/unix" {
			t.Errorf("logs imports %s: only the standard library and golang.org/x/sys/unix are allowed", imp)
		}
	}
}
