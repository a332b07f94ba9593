//go:build linux

package proc

import (
	"io"
	"os"
	"strings"
	"testing"
)

// ExtraFiles reach the program at their numbers on every start path:
// forked directly, through the stub (a umask), placed in a cgroup, and
// forked by a sandbox init inside namespaces. A hole below the highest
// number is closed, and fd 3 of the stub's own protocol does not clash.
func TestExtraFiles(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	for _, tc := range []struct {
		name  string
		sc    SandboxConfig
		umask int
	}{
		{"direct", SandboxConfig{Name: "direct", NoCgroup: true}, -1},
		{"stub", SandboxConfig{Name: "stub", NoCgroup: true}, 0o22},
		{"cgroup", SandboxConfig{Name: "cgroup"}, -1},
		{"cgroup-stub", SandboxConfig{Name: "cgroupstub"}, 0o22},
		{"init", SandboxConfig{Name: "init", Namespaces: []Namespace{NamespacePID, NamespaceUTS}}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r3, w3, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r5, w5, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r3.Close()
			defer r5.Close()
			// fd 4 must be closed: writing to it fails, and the script says so.
			cfg := shell(`echo three >&3; echo five >&5; if { echo x >&4; } 2>/dev/null; then echo open >&5; else echo closed >&5; fi`)
			cfg.Umask = tc.umask
			cfg.ExtraFiles = map[int]*os.File{3: w3, 5: w5}
			_, ev := run(t, r, tc.sc, cfg)
			w3.Close()
			w5.Close()
			if ev.ExitCode != 0 {
				t.Fatalf("exit %+v", ev)
			}
			got3, _ := io.ReadAll(r3)
			got5, _ := io.ReadAll(r5)
			if string(got3) != "three\n" || strings.Join(strings.Fields(string(got5)), " ") != "five closed" {
				t.Errorf("fd 3 got %q, fd 5 got %q", got3, got5)
			}
		})
	}
}

func TestExtraFilesRejected(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	sid, err := r.CreateSandbox(ctxT(t), SandboxConfig{Name: "bad", NoCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range []int{1, 2000} {
		cfg := shell("true")
		cfg.ExtraFiles = map[int]*os.File{fd: os.Stdout}
		if _, err := r.Create(ctxT(t), sid, cfg); err == nil || !strings.Contains(err.Error(), "descriptor") {
			t.Errorf("fd %d: got %v, want an error about the descriptor", fd, err)
		}
	}
}
