package proc

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps proc at the bottom of the dependency graph: the standard
// library, x/sys and its own cgroups package only.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/supervise-dev/supervise/proc").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		switch {
		case !strings.Contains(strings.SplitN(dep, "/", 2)[0], "."): // standard library
		case strings.HasPrefix(dep, "golang.org/x/sys/"):
		case dep == "github.com/supervise-dev/supervise/proc", dep == "github.com/supervise-dev/supervise/proc/cgroups":
		default:
			t.Errorf("proc depends on %s: it may use only the standard library and golang.org/x/sys", dep)
		}
	}
}
