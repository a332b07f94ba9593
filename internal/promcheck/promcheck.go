// Package promcheck runs `promtool check metrics` on an exposition, as
// Prometheus reads it, naming conventions included. Tests use it (the
// metrics package's and the binary's); promtool comes from Debian's
// prometheus package, which scripts/test.sh installs.
package promcheck

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// ErrMissing is returned when promtool is not installed.
var ErrMissing = errors.New("promtool is not installed (apt-get install prometheus; scripts/test.sh does it)")

// Check returns promtool's complaints about body, if any.
func Check(body string) error {
	bin, err := exec.LookPath("promtool")
	if err != nil {
		return ErrMissing
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		return fmt.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	return nil
}
