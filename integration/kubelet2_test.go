package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A liveness probe that always passes must never restart its program, even
// when post_start outlasts the probe's initial delay and timeout: the
// probe's timeout counts from when it runs, as the kubelet's. Here the
// probe is due (delay 0) four seconds before it can run.
func TestKubeletProbeTimeoutAfterLongPostStart(t *testing.T) {
	dir, file := writeConfig(t, "")
	runs := filepath.Join(dir, "probe-runs")
	if err := os.WriteFile(file, []byte(`
[program.slowstart]
command = ["sleep", "1000"]
restart = "always"
[program.slowstart.hooks.post_start]
command = ["sleep", "4"]
[program.slowstart.probes.liveness]
command = ["sh", "-c", "echo run >> `+runs+`"]
period = "1s"
failure_threshold = 1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, file)
	// Four passing probes after a 4 s post_start: about 8 s of the run.
	eventually(t, "four liveness probes run", 60*time.Second, func() bool {
		if st, ok := d.status()["slowstart"]; ok && st.Restarts != 0 {
			t.Fatalf("restarted by a liveness probe that always passes: %+v (last exit %+v)", st, st.LastExit)
		}
		return len(readLines(t, runs)) >= 4
	})
	if st := d.status()["slowstart"]; st.State != "Running" || st.Restarts != 0 {
		t.Fatalf("status = %+v, want Running with 0 restarts", st)
	}
}
