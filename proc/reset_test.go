//go:build linux

package proc

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ResetSandbox keeps a namespaced sandbox (same init) for the next
// process and kills what the previous one left behind; a running process
// or a dead init refuses it.
func TestResetSandbox(t *testing.T) {
	needRoot(t)
	r := newRuntime(t, Options{})
	ctx := ctxT(t)
	for _, sc := range []SandboxConfig{
		{Name: "pidns", Namespaces: []Namespace{NamespacePID, NamespaceMount}},
		{Name: "utsns", Namespaces: []Namespace{NamespaceUTS}},
	} {
		t.Run(sc.Name, func(t *testing.T) {
			if r.cg == nil && !sc.has(NamespacePID) {
				t.Skip("without a pid namespace only a cgroup finds the leftovers")
			}
			sid, err := r.CreateSandbox(ctx, sc)
			if err != nil {
				t.Fatal(err)
			}
			defer r.DeleteSandbox(ctx, sid)
			before, _ := r.SandboxStatus(sid)

			running := mustStart(t, r, sid, shell("exec sleep 1000"))
			if err := r.ResetSandbox(ctx, sid); err == nil || !strings.Contains(err.Error(), "still running") {
				t.Fatalf("reset with a running process: %v", err)
			}
			if err := r.Stop(ctx, running, 0); err != nil {
				t.Fatal(err)
			}
			_ = r.Remove(ctx, running)

			out, ch := lines(t)
			cfg := shell("setsid sleep 1000 & echo $!")
			cfg.Stdout = out
			first := mustStart(t, r, sid, cfg)
			daemon := next(t, ch)
			waitExit(t, r, first)
			_ = r.Remove(ctx, first)

			if err := r.ResetSandbox(ctx, sid); err != nil {
				t.Fatal(err)
			}
			after, _ := r.SandboxStatus(sid)
			if after.InitPid != before.InitPid || after.State != SandboxReady {
				t.Fatalf("sandbox not kept: init %d → %d, %s", before.InitPid, after.InitPid, after.State)
			}
			// The leftover is gone (it may still be a zombie for an instant
			// in a pid namespace: its init reaps it asynchronously).
			check := shell("for i in $(seq 1 200); do kill -0 " + daemon + " 2>/dev/null || exit 0; sleep 0.05; done; exit 1")
			second := mustStart(t, r, sid, check)
			if ev := waitExit(t, r, second); ev.ExitCode != 0 {
				t.Fatalf("leftover %s still alive after the reset", daemon)
			}
			_ = r.Remove(ctx, second)

			// A dead init cannot be reused.
			_ = syscall.Kill(after.InitPid, syscall.SIGKILL)
			deadline := time.Now().Add(30 * time.Second)
			for {
				st, _ := r.SandboxStatus(sid)
				if st.State == SandboxNotReady {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("init death not noticed")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := r.ResetSandbox(ctx, sid); !errors.Is(err, ErrSandboxGone) {
				t.Fatalf("reset after the init died: %v, want ErrSandboxGone", err)
			}
		})
	}
}
