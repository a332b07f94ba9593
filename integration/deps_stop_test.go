package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A db-like program (ready when it has written its "socket" file, which
// it removes when it shuts down) and a web that serves only while the db
// is there and crashes without it. Stopping db stops web first, so web
// never crash-loops against nothing; starting db brings web back once db
// is ready.
func TestStoppingADependencyStopsItsDependentsFirst(t *testing.T) {
	dir, file := writeConfig(t, `
[program.db]
command = ["sh", "-c", "trap 'rm -f db.sock; exit 0' TERM; sleep 0.2; echo up > db.sock; while :; do sleep 0.1; done"]
[program.db.probes.readiness]
command = ["test", "-f", "db.sock"]
period = "100ms"

[program.web]
command = ["sh", "-c", "while [ -f db.sock ]; do sleep 0.05; done; echo 'web: lost the db' >&2; exit 1"]
depends_on = ["db"]
[program.web.backoff]
initial = "100ms"
`)
	d := startDaemon(t, dir, file)
	d.running("db", "web")
	eventually(t, "db ready and web running", 30*time.Second, func() bool {
		s := d.healthStatus()
		return isReady(s["db"]) && s["web"].State == "Running"
	})
	stopAt := time.Now()
	if out, code := d.ctl("stop", "db"); code != 0 {
		t.Fatalf("supervisectl stop db: exit %d: %s", code, out)
	}
	s := d.status()
	if s["web"].State != "Stopped" || s["db"].State != "Stopped" {
		t.Fatalf("after stop db: web %s, db %s; want both Stopped", s["web"].State, s["db"].State)
	}
	if strings.Contains(d.stderr.String(), "web: lost the db") || s["web"].Restarts != 0 {
		t.Fatalf("web ran against a stopped db (it crashed %d times)", s["web"].Restarts)
	}
	// web went down before db did.
	var order []string
	for _, ev := range d.events() {
		if ev.To == "Stopped" && !ev.Time.Before(stopAt) {
			order = append(order, ev.Program)
		}
	}
	if strings.Join(order, " ") != "web db" {
		t.Errorf("stopped in the order %v, want web then db", order)
	}
	if _, err := os.Stat(filepath.Join(dir, "db.sock")); err == nil {
		t.Error("db did not shut down cleanly")
	}

	if out, code := d.ctl("start", "db"); code != 0 {
		t.Fatalf("supervisectl start db: exit %d: %s", code, out)
	}
	eventually(t, "web back once db is ready", 30*time.Second, func() bool {
		s := d.healthStatus()
		return isReady(s["db"]) && s["web"].State == "Running"
	})
	d.signal(15)
	d.wait(60 * time.Second)
}
