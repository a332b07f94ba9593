//go:build linux

package proc

import (
	"os"
	"strings"
	"testing"
)

// A snapshot comes from another binary: Validate refuses an owner tag
// that is not ours, ids that are not the runtime's or repeat, and a
// running process that is not a child of this process.
func TestSnapshotValidateRefuses(t *testing.T) {
	tag := ownerTag()
	sb := func(id string, procs ...ProcessSnapshot) SandboxSnapshot {
		return SandboxSnapshot{ID: id, Config: SandboxConfig{Name: "web"}, Processes: procs}
	}
	pr := func(id string, pid int) ProcessSnapshot {
		return ProcessSnapshot{ID: id, Pid: pid, StopSignal: 15}
	}
	id := func(n string) string { return "web-" + tag + "-" + n }
	cases := []struct {
		name string
		s    Snapshot
		want string
	}{
		{"another tag", Snapshot{OwnerTag: "999999999s1r00"}, "owner tag"},
		{"garbage tag", Snapshot{OwnerTag: "x/../y"}, "owner tag"},
		{"bad id", Snapshot{OwnerTag: tag, Sandboxes: []SandboxSnapshot{sb("../etc")}}, "not a runtime id"},
		{"repeated id", Snapshot{OwnerTag: tag, Sandboxes: []SandboxSnapshot{sb(id("1")), sb(id("1"))}}, "repeated"},
		// Ourselves: alive, above 1, and not our child (our parent may be
		// pid 1, as in the v2 test VM, which another check refuses).
		{"not our child", Snapshot{OwnerTag: tag, Sandboxes: []SandboxSnapshot{sb(id("1"), pr(id("2"), os.Getpid()))}}, "not a child of ours"},
		{"pid 1", Snapshot{OwnerTag: tag, Sandboxes: []SandboxSnapshot{sb(id("1"), pr(id("2"), 1))}}, "pid 1"},
		{"namespaces without init", Snapshot{OwnerTag: tag, Sandboxes: []SandboxSnapshot{{ID: id("1"), Config: SandboxConfig{Name: "web", Namespaces: []Namespace{NamespacePID}}}}}, "no init"},
		{"init not our child", Snapshot{OwnerTag: tag, Seq: 9, Sandboxes: []SandboxSnapshot{{ID: id("1"), Config: SandboxConfig{Name: "web", Namespaces: []Namespace{NamespacePID}},
			Init: &InitSnapshot{Pid: os.Getpid(), FD: 7}}}}, "not a child of ours"},
		{"init on stdin", Snapshot{OwnerTag: tag, Seq: 9, Sandboxes: []SandboxSnapshot{{ID: id("1"), Config: SandboxConfig{Name: "web", Namespaces: []Namespace{NamespacePID}},
			Init: &InitSnapshot{Pid: 12345, FD: 0}}}}, "descriptor 0"},
		{"reaped init with a socket", Snapshot{OwnerTag: tag, Seq: 9, Sandboxes: []SandboxSnapshot{{ID: id("1"), Config: SandboxConfig{Name: "web", Namespaces: []Namespace{NamespacePID}},
			Init: &InitSnapshot{Pid: 12345, FD: 7, Reaped: true}}}}, "reaped but its socket"},
		{"running at a dead init", Snapshot{OwnerTag: tag, Seq: 9, Sandboxes: []SandboxSnapshot{{ID: id("1"), Config: SandboxConfig{Name: "web", Namespaces: []Namespace{NamespacePID}},
			Init: &InitSnapshot{Pid: 12345, FD: -1, Reaped: true}, Processes: []ProcessSnapshot{{ID: id("2"), Pid: 0, StopSignal: 15, Child: 3}}}}}, "key 3"},
		{"key past the sequence", Snapshot{OwnerTag: tag, Seq: 2, Sandboxes: []SandboxSnapshot{{ID: id("1"), Config: SandboxConfig{Name: "web", Namespaces: []Namespace{NamespacePID}},
			Init: &InitSnapshot{Pid: 12345, FD: -1, Reaped: true}, Processes: []ProcessSnapshot{{ID: id("2"), Pid: 0, StopSignal: 15, Child: 3}}}}}, "key 3"},
		{"bad signal", Snapshot{OwnerTag: tag, Sandboxes: []SandboxSnapshot{sb(id("1"), ProcessSnapshot{ID: id("2"), Pid: 12345, StopSignal: 99})}}, "stop signal"},
	}
	for _, c := range cases {
		err := c.s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want an error with %q", c.name, err, c.want)
		}
	}
	ok := Snapshot{OwnerTag: tag, Sandboxes: []SandboxSnapshot{sb(id("1"))}}
	if err := ok.Validate(); err != nil {
		t.Errorf("a sandbox with no process: %v", err)
	}
}
