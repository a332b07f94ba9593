package notify

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps: notify uses the standard library, x/sys and backoff (the
// Clock) only.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/supervise-dev/supervise/notify").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const mod = "github.com/supervise-dev/supervise/"
	for dep := range strings.FieldsSeq(string(out)) {
		switch {
		case !strings.Contains(strings.SplitN(dep, "/", 2)[0], "."): // standard library
		case strings.HasPrefix(dep, "golang.org/x/sys/"), strings.HasPrefix(dep, "golang.org/x/time/"): // x/time through backoff
		case dep == mod+"notify", dep == mod+"backoff":
		default:
			t.Errorf("notify depends on %s: it may use only the standard library, x/sys and backoff", dep)
		}
	}
}
