//go:build linux

package proc

import (
	"strings"
	"testing"
)

// LISTEN_PID names the program's own pid on every start path, as
// sd_listen_fds(3) demands (it compares it with getpid()): forked
// directly, placed in a cgroup, and forked by a sandbox init in its own
// pid namespace (where the program's pid is the namespace's).
func TestListenPID(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	for _, tc := range []struct {
		name string
		sc   SandboxConfig
	}{
		{"direct", SandboxConfig{Name: "lpdirect", NoCgroup: true}},
		{"cgroup", SandboxConfig{Name: "lpcgroup"}},
		{"init", SandboxConfig{Name: "lpinit", Namespaces: []Namespace{NamespacePID}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := shell(`echo "$LISTEN_PID $$"`)
			cfg.Env = append(cfg.Env, "LISTEN_PID=1", "LISTEN_FDS=0")
			cfg.ListenPID = true
			ev, out := runOutput(t, r, tc.sc, cfg)
			f := strings.Fields(out)
			if ev.ExitCode != 0 || len(f) != 2 || f[0] != f[1] {
				t.Errorf("exit %d, LISTEN_PID and pid: %q; want the same number twice", ev.ExitCode, out)
			}
		})
	}
}
