package supervisor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
)

// A restart ended by an upgrade in place says how far it got; resumed
// with that, it waits for what it asked already and restarts the rest:
// every instance replaced once.
func TestRestartResumesAfterAnUpgrade(t *testing.T) {
	web := program("web", func(p *config.Program) { p.Instances = 4 })
	h := newHarness(t, web)
	for _, k := range web4 {
		h.waitState(k, Running)
	}
	n := len(h.eventsOf(t))
	before := h.procIDs(web4...)
	ended, end := context.WithCancelCause(context.Background())
	end(ctl.ErrUpgrading)
	err := h.sup.Restart(ended, []string{"web"}, ctl.RestartOptions{})
	var ui *ctl.UpgradeInterrupted
	if !errors.As(err, &ui) || ui.Restart == nil {
		t.Fatalf("restart ended by an upgrade: %v, want how far it got", err)
	}
	r := ui.Restart
	if len(r.Asked) != 1 || r.Asked["web:0"] != before[0] || !slices.Equal(r.Remaining, web4[1:]) {
		t.Fatalf("resume %+v, want web:0 asked (process %s) and the rest remaining", r, before[0])
	}
	names := append(slices.Clone(r.Remaining), "web:0")
	if err := h.sup.Restart(context.Background(), names, ctl.RestartOptions{Resume: r.Asked}); err != nil {
		t.Fatalf("the resumed restart: %v", err)
	}
	h.allReplaced(web4, before)
	order := h.replacements(t, n)
	for _, k := range web4 {
		if c := strings.Count(strings.Join(order, ","), k+" Stopping"); c != 1 {
			t.Errorf("%s stopped %d times, want once: %v", k, c, order)
		}
	}
}
