package integration

import (
	"strings"
	"testing"
)

// Two supervise, each PID 1 of its own pid namespace, on one cgroup
// hierarchy (containers without a cgroup namespace): neither sees the
// other's processes, so each finds the other's cgroups empty at its start.
// The kernel, which sees them, refuses to remove them; the second must take
// that as "alive" and leave them at once, not retry each for the kill
// timeout, and the first one's programs run on.
func TestSweepLeavesAnotherPidNamespacesCgroups(t *testing.T) {
	needRoot(t)
	dirA, fileA := writeConfig(t, `
[program.a1]
command = ["sleep", "infinity"]
[program.a2]
command = ["sleep", "infinity"]
`)
	a := startDaemonUnder(t, inPidNamespace, binary, dirA, fileA)
	before := a.running("a1", "a2")

	dirB, fileB := writeConfig(t, `
[program.b1]
command = ["sleep", "infinity"]
`)
	b := startDaemonUnder(t, inPidNamespace, binary, dirB, fileB)
	b.running("b1")
	if log := b.stderr.String(); strings.Contains(log, "cgroup of a dead supervisor") {
		t.Errorf("the second supervise tried to sweep the first one's cgroups:\n%s", tail(log, 20))
	}
	after := a.running("a1", "a2")
	for n, pid := range before {
		if after[n] != pid {
			t.Errorf("%s of the first supervise has pid %d after the second started, want %d", n, after[n], pid)
		}
	}
}
