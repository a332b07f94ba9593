package watch

import (
	"testing"

	"github.com/supervise-dev/supervise/watch/glob"
)

func TestDefaultExcludes(t *testing.T) {
	d := DefaultExcludes()
	d[0] = "changed"
	if DefaultExcludes()[0] == "changed" {
		t.Error("DefaultExcludes returned the package's own slice")
	}
	for _, p := range DefaultExcludes() {
		if _, err := glob.Compile(p); err != nil {
			t.Errorf("default exclude %q: %v", p, err)
		}
	}
}
