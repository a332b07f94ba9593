package pid1

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps pid1 below cmd: it may use proc, backoff and config (for
// its parsers), never the supervisor, the control API or the CLI library.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/supervise-dev/supervise/pid1").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	bad := map[string]string{
		"github.com/supervise-dev/supervise/supervisor": "nothing imports the supervisor but cmd",
		"github.com/supervise-dev/supervise/ctl":        "exec has no control socket",
		"github.com/supervise-dev/supervise/hooks":      "exec has no hooks",
		"github.com/urfave/cli/v2":                      "the CLI is cmd's",
		"net/http":                                      "an init starts fast: no HTTP stack",
	}
	for dep := range strings.FieldsSeq(string(out)) {
		if why, ok := bad[dep]; ok {
			t.Errorf("pid1 depends on %s: %s", dep, why)
		}
	}
}
