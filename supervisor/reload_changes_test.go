package supervisor

import (
	"fmt"
	"testing"

	"github.com/supervise-dev/supervise/config"
)

// What a reload changed, as the Reloaded event and an upgrade say it.
func TestDiffConfigs(t *testing.T) {
	cfg := func(progs ...*config.Program) *config.Config { return &config.Config{File: "s.toml", Programs: progs} }
	old := cfg(program("keep"), program("gone"), program("cmd"), program("policy"))
	now := cfg(program("keep"), program("cmd", func(p *config.Program) { p.Command = []string{"other"} }),
		program("policy", func(p *config.Program) { p.Restart = config.RestartNever }), program("new"))
	c := diffConfigs(old, now)
	if got, want := c.String(), "1 added (new), 1 removed (gone), 2 changed (cmd, policy; 1 with new processes)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got := diffConfigs(old, old).String(); got != "no change" {
		t.Errorf("no change says %q", got)
	}
	var many []*config.Program
	for i := range 7 {
		many = append(many, program(fmt.Sprint("p", i)))
	}
	if got, want := diffConfigs(cfg(), cfg(many...)).String(), "7 added (p0, p1, p2, p3, p4, …)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
