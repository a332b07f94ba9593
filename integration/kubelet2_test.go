package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A liveness probe that always passes must never restart its program, even
// when post_start outlasts the probe's initial delay and timeout: the
// probe's timeout counts from when it runs, as the kubelet's. Here the
// probe is due (delay 0) ten seconds before it can run, twice its timeout:
// a timeout counted from when it was due fails the first run, while a
// probe that is only slow to fork on a loaded machine has five seconds.
func TestKubeletProbeTimeoutAfterLongPostStart(t *testing.T) {
	dir, file := writeConfig(t, "")
	runs := filepath.Join(dir, "probe-runs")
	if err := os.WriteFile(file, []byte(`
[program.slowstart]
command = ["sleep", "1000"]
restart = "always"
[program.slowstart.hooks.post_start]
command = ["sleep", "10"]
[program.slowstart.probes.liveness]
command = ["sh", "-c", "echo run >> `+runs+`"]
period = "1s"
timeout = "5s"
failure_threshold = 1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, file)
	// Four passing probes after a 10 s post_start: about 14 s of the run.
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

// A run ended by a signal shows its exit as the kubelet and shells do,
// 128+N (143 for TERM, 137 for KILL), with the signal's name beside it:
// in status --json (code, and signal kept), status's LAST EXIT and the
// exit's event.
func TestKubeletSignalExitIs128PlusN(t *testing.T) {
	dir, file := writeConfig(t, `
[program.termed]
command = ["sh", "-c", "kill -TERM $$; sleep 1000"]
restart = "never"
[program.killed]
command = ["sh", "-c", "kill -KILL $$; sleep 1000"]
restart = "never"
[program.keep]
command = ["sleep", "1000"]
`)
	d := startDaemon(t, dir, file)
	eventually(t, "both programs ended", 60*time.Second, func() bool {
		st := d.status()
		return st["termed"].LastExit != nil && st["killed"].LastExit != nil
	})
	st := d.status()
	for name, want := range map[string]struct {
		code int
		sig  string
	}{"termed": {143, "TERM"}, "killed": {137, "KILL"}} {
		if e := st[name].LastExit; e.Code != want.code || e.Signal != want.sig {
			t.Errorf("%s: status --json last_exit = %+v, want code %d with signal %s", name, *e, want.code, want.sig)
		}
	}
	out, _ := d.ctl("status")
	for _, want := range []string{"exit 143 (SIGTERM)", "exit 137 (SIGKILL)"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	events, _ := d.ctl("events", "--json")
	for _, want := range []string{`"exit 143 (SIGTERM)"`, `"exit 137 (SIGKILL)"`} {
		if !strings.Contains(events, want) {
			t.Errorf("events lack %s:\n%s", want, events)
		}
	}
}

// pre_stop = { sleep = "2s" } is the kubelet's sleep action: no process,
// the program keeps serving for the sleep, then gets its stop signal. A
// sleep longer than the stop's grace is cut short by it.
func TestKubeletSleepPreStop(t *testing.T) {
	dir, file := writeConfig(t, "")
	termed := filepath.Join(dir, "termed")
	if err := os.WriteFile(file, []byte(`
[program.lb]
command = ["sh", "-c", "trap 'echo term >> `+termed+`; exit 0' TERM; while :; do sleep 0.05; done"]
stop_timeout = "20s"
[program.lb.hooks.pre_stop]
sleep = "2s"

[program.short]
command = ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done"]
stop_timeout = "3s"
[program.short.hooks.pre_stop]
sleep = "25s"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, file)
	d.running("lb", "short")
	began := time.Now()
	stopped := make(chan string, 1)
	go func() { out, _ := d.ctl("stop", "lb"); stopped <- out }()
	eventually(t, "lb stopping", 60*time.Second, func() bool { return d.status()["lb"].State == "Stopping" })
	if lines := readLines(t, termed); len(lines) != 0 {
		t.Fatalf("the stop signal came before the sleep: %q", lines)
	}
	select {
	case <-stopped:
	case <-time.After(60 * time.Second):
		t.Fatal("stop did not return")
	}
	if took := time.Since(began); took < 2*time.Second {
		t.Errorf("stopped after %v, before pre_stop's 2s sleep ended", took)
	}
	if lines := readLines(t, termed); len(lines) != 1 {
		t.Errorf("the program got its stop signal %d times after the sleep, want once: %q", len(lines), lines)
	}
	if st := d.status()["lb"]; st.State != "Stopped" || st.LastExit == nil || st.LastExit.Code != 0 {
		t.Errorf("lb after the stop: %+v", st)
	}

	// The grace (stop_timeout 3s) bounds the sleep of 25s: the stop ends
	// long before the sleep would.
	began = time.Now()
	d.ctlOK("stop", "short")
	if took := time.Since(began); took >= 20*time.Second {
		t.Errorf("the stop took %v: the 25s sleep outlived stop_timeout 3s", took)
	}
}
