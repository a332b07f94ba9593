package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type healthStatus struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Ready    *bool  `json:"ready"`
	Pid      int    `json:"pid"`
	Restarts int    `json:"restarts"`
	LastExit *struct {
		Reason     string    `json:"reason"`
		FinishedAt time.Time `json:"finished_at"`
	} `json:"last_exit"`
	Message string `json:"message"`
	Probes  map[string]struct {
		OK      bool   `json:"ok"`
		Message string `json:"message"`
	} `json:"probes"`
}

func (d *daemon) healthStatus() map[string]healthStatus {
	out, code := d.ctl("status", "--json")
	m := map[string]healthStatus{}
	if code != 0 {
		return m
	}
	var list []healthStatus
	if json.Unmarshal([]byte(out), &list) == nil {
		for _, p := range list {
			m[p.Name] = p
		}
	}
	return m
}

func isReady(s healthStatus) bool { return s.Ready != nil && *s.Ready }

// Readiness gates dependents: ready_log_line, sd_notify and a readiness
// probe each make their program ready only when it says so, and a
// dependent waits for it; a failing liveness probe restarts a program as
// a crash.
func TestHealthReadinessGatesAndLivenessRestarts(t *testing.T) {
	dir, file := writeConfig(t, `
[program.logready]
command = ["sh", "-c", "until [ -f go-log ]; do sleep 0.05; done; echo 'server accepting connections'; exec sleep 1000"]
ready_log_line = "accepting connections"

[program.notified]
command = ["sh", "-c", "until [ -f go-notify ]; do sleep 0.05; done; python3 -c \"$SEND\" \"$NOTIFY_SOCKET\" READY=1; exec sleep 1000"]
notify = "sd_notify"
env = { SEND = '''`+sendNotify+`''' }

[program.probed]
command = ["sleep", "1000"]
[program.probed.probes.readiness]
command = ["test", "-f", "go-probe"]
period = "100ms"

[program.dependent]
command = ["sleep", "1000"]
depends_on = ["logready", "notified", "probed"]

[program.live]
command = ["sleep", "1000"]
[program.live.probes.liveness]
command = ["test", "!", "-f", "dead"]
period = "100ms"
failure_threshold = 2
# Short: should the new process's probe still find "dead" (the test
# removes it once it saw the restart) it is restarted again, not parked.
[program.live.backoff]
initial = "200ms"
max = "1s"
`)
	d := startDaemon(t, dir, file)
	eventually(t, "all three running, none ready, dependent waiting", 30*time.Second, func() bool {
		s := d.healthStatus()
		return s["logready"].State == "Running" && s["notified"].State == "Running" && s["probed"].State == "Running" &&
			s["dependent"].State == "Waiting"
	})
	// The readiness probe has run and failed: still nothing may be ready.
	eventually(t, "probed's readiness probe failing", 30*time.Second, func() bool {
		p, ok := d.healthStatus()["probed"].Probes["readiness"]
		return ok && !p.OK
	})
	s := d.healthStatus()
	for _, n := range []string{"logready", "notified", "probed"} {
		if s[n].Ready == nil || *s[n].Ready {
			t.Fatalf("%s ready before it said so: %+v", n, s[n])
		}
	}
	for i, n := range []string{"go-log", "go-notify", "go-probe"} {
		if err := writeFileNow(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
		name := []string{"logready", "notified", "probed"}[i]
		eventually(t, name+" ready", 30*time.Second, func() bool { return isReady(d.healthStatus()[name]) })
		if i < 2 && d.healthStatus()["dependent"].State != "Waiting" {
			t.Fatalf("dependent started before all its dependencies were ready")
		}
	}
	eventually(t, "dependent running", 30*time.Second, func() bool { return d.healthStatus()["dependent"].State == "Running" })

	// Liveness: the probe fails twice → the program is restarted as a crash.
	old := d.healthStatus()["live"].Pid
	if err := writeFileNow(filepath.Join(dir, "dead")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "live restarted for its liveness", 30*time.Second, func() bool {
		st := d.healthStatus()["live"]
		return st.LastExit != nil && st.LastExit.Reason == "LivenessProbeFailed"
	})
	_ = os.Remove(filepath.Join(dir, "dead"))
	eventually(t, "live running again with a new pid", 30*time.Second, func() bool {
		st := d.healthStatus()["live"]
		return st.State == "Running" && st.Pid != old
	})
}
