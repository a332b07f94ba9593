package probe

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps: probe sits beside hooks, under the supervisor: it may use the
// standard library, backoff (the Clock) and proc (Exec's types) only.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/supervise-dev/supervise/probe").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const mod = "github.com/supervise-dev/supervise/"
	for dep := range strings.FieldsSeq(string(out)) {
		switch {
		case !strings.Contains(strings.SplitN(dep, "/", 2)[0], "."): // standard library
		case strings.HasPrefix(dep, "golang.org/x/sys/"), strings.HasPrefix(dep, "golang.org/x/time/"): // through proc, backoff
		case dep == mod+"probe", dep == mod+"backoff", dep == mod+"proc", dep == mod+"proc/cgroups":
		default:
			t.Errorf("probe depends on %s: it may use only the standard library, backoff and proc", dep)
		}
	}
}
