package watch

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps watch small: the standard library, fsnotify and the clock
// of backoff. It knows nothing of programs, configs or the supervisor.
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
		"github.com/fsnotify/fsnotify":                  true,
		"github.com/supervise-dev/supervise/backoff":    true,
		"github.com/supervise-dev/supervise/watch/glob": true,
	}
	for _, imp := range strings.Fields(string(out)) {
		if first, _, _ := strings.Cut(imp, "/"); !strings.Contains(first, ".") {
			continue // standard library
		}
		if !allowed[imp] {
			t.Errorf("watch imports %s: only the standard library, fsnotify, backoff and watch/glob are allowed", imp)
		}
	}
}
