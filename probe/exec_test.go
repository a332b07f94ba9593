package probe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/proc"
)

func TestMain(m *testing.M) {
	if proc.IsInit() { // the runtime may re-execute us as its stub
		os.Exit(proc.InitMain())
	}
	os.Exit(m.Run())
}

// TestCommandProbeRealExec runs command probes through a real proc.Runtime
// on the real clock: exit status, output in the message, the program's
// environment and directory, and a timeout that kills the command.
func TestCommandProbeRealExec(t *testing.T) {
	rt, err := proc.New(proc.Options{CgroupMode: "none", NoSubreaper: true})
	if err != nil {
		t.Skipf("no process runtime here: %v", err)
	}
	defer rt.Close()
	sid, err := rt.CreateSandbox(t.Context(), proc.SandboxConfig{Name: "probe-test", NoCgroup: true})
	if err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "live")

	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	changes := make(chan Status, 8)
	r, err := Start(Config{
		Exec:       rt,
		SandboxID:  sid,
		ExecConfig: proc.ExecConfig{Dir: dir, Env: []string{"PATH=/usr/bin:/bin", "MARKER=" + marker}},
		// Ready once the probe sees its directory and environment.
		Readiness: &Spec{Command: []string{"sh", "-c", `test "$PWD" = "` + dir + `" && test -n "$MARKER"`},
			Period: 20 * time.Millisecond, Timeout: deadline},
		// Alive while the marker exists.
		Liveness: &Spec{Command: []string{"sh", "-c", `test -e "$MARKER" || { echo "no $MARKER"; exit 3; }`},
			Period: 20 * time.Millisecond, Timeout: deadline, FailureThreshold: 2},
		OnChange: func(st Status) { changes <- st },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if st := recv(t, changes, "ready"); !st.Ready {
		t.Fatalf("first change = %+v, want ready", st)
	}
	os.Remove(marker)
	st := recv(t, changes, "liveness failure")
	if !st.LivenessFailed || !strings.HasSuffix(st.Failure, "exit code 3: no "+marker) {
		t.Fatalf("status = %+v, want liveness failed with exit code 3", st)
	}

	// A command past its timeout is killed and fails the probe.
	pidFile := filepath.Join(dir, "pid")
	r2, err := Start(Config{
		Exec:      rt,
		SandboxID: sid,
		Liveness: &Spec{Command: []string{"sh", "-c", "echo $$ > " + pidFile + "; exec sleep 600"},
			Timeout: 300 * time.Millisecond, FailureThreshold: 1},
		OnChange: func(st Status) { changes <- st },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Stop()
	st = recv(t, changes, "timeout")
	if !st.LivenessFailed || st.Last[Liveness].Message != "timed out after 300ms" {
		t.Fatalf("status = %+v, want failed: timed out after 300ms", st)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the probe command never ran: %v", err)
	}
	// Exec returns once the command was reaped: its pid is gone.
	if _, err := os.Stat("/proc/" + strings.TrimSpace(string(data))); err == nil {
		t.Fatalf("the timed-out probe command (pid %s) is still running", strings.TrimSpace(string(data)))
	}
}
