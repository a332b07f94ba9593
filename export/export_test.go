package export

import (
	"strings"
	"testing"
)

// A warning is one line on a terminal: a value's line break or escape
// sequence must not start a line of its own or move the cursor.
func TestWarningStringQuotesControls(t *testing.T) {
	w := Warning{Program: "p\nwarning: forged", Key: "k\r\x1b[2K", Why: "a\nb\x7f\tc é"}
	got := w.String()
	if strings.ContainsFunc(got, func(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }) {
		t.Errorf("raw control characters in %q", got)
	}
	if !strings.Contains(got, `a\nb\x7f\tc é`) {
		t.Errorf("the controls are not escaped as Go does: %q", got)
	}
}

// Every warning the exporters give on hostile values is one line.
func TestExportWarningsAreOneLine(t *testing.T) {
	cfg := parse(t, "[program.p]\ncommand = \"/bin/true\"\nstdout = { file = \"/tmp/a\\nwarning: forged\" }\n"+
		"probes.liveness = { http = \"http://evil.example\\u0085:80/\" }\n")
	_, sw, _ := Systemd(cfg, SystemdOptions{Prefix: "app"})
	_, kw, err := Kubernetes(cfg, KubernetesOptions{Image: "i", Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range append(sw, kw...) {
		if s := w.String(); strings.ContainsAny(s, "\n\r\u0085") {
			t.Errorf("warning spans lines: %q", s)
		}
	}
}
