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
// is there and crashes without it, so it is bound to db (restart_with).
// Stopping db stops web first, so web never crash-loops against nothing;
// starting db brings web back once db is ready.
func TestStoppingADependencyStopsItsBoundDependentsFirst(t *testing.T) {
	dir, file := writeConfig(t, `
[program.db]
command = ["sh", "-c", "trap 'rm -f db.sock; exit 0' TERM; sleep 0.2; echo up > db.sock; while :; do sleep 0.1; done"]
[program.db.probes.readiness]
command = ["test", "-f", "db.sock"]
period = "100ms"

[program.web]
command = ["sh", "-c", "while [ -f db.sock ]; do sleep 0.05; done; echo 'web: lost the db' >&2; exit 1"]
depends_on = { db = { condition = "ready", restart_with = true } }
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
	d.ctlOK("stop", "db")
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

	d.ctlOK("start", "db")
	eventually(t, "web back once db is ready", 30*time.Second, func() bool {
		s := d.healthStatus()
		return isReady(s["db"]) && s["web"].State == "Running"
	})
	d.signal(15)
	d.wait(60 * time.Second)
}

// What is not bound to a dependency keeps running through its restart or
// stop, as through its crash: db ← web (two instances) ← front. Only
// --with-dependents takes web and front down, deepest first, and brings
// them back.
func TestDependentsOutliveARestartOrStop(t *testing.T) {
	loop := `["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.1; done"]`
	dir, file := writeConfig(t, `
[program.db]
command = `+loop+`
[program.web]
command = `+loop+`
instances = 2
depends_on = ["db"]
[program.front]
command = `+loop+`
depends_on = ["web"]
`)
	d := startDaemon(t, dir, file)
	all := []string{"db", "web:0", "web:1", "front"}
	dependents := []string{"web:0", "web:1", "front"}
	pids := d.running(all...)
	same := func(what string, keys ...string) {
		t.Helper()
		now := d.running(all...)
		for _, k := range keys {
			if now[k] != pids[k] {
				t.Errorf("after %s: %s runs pid %d, was %d", what, k, now[k], pids[k])
			}
		}
	}
	d.ctlOK("restart", "db")
	same("restart db", dependents...)
	d.ctlOK("stop", "db")
	if s := d.status(); s["web:0"].State != "Running" || s["front"].State != "Running" {
		t.Errorf("after stop db: web:0 %s, front %s; want both Running", s["web:0"].State, s["front"].State)
	}
	d.ctlOK("start", "db")
	same("stop db + start db", dependents...)
	d.ctlOK("restart", "web:0")
	same("restart web:0", "web:1", "front")
	d.ctlOK("stop", "web:0")
	if s := d.status(); s["front"].State != "Running" || s["front"].Pid != pids["front"] {
		t.Errorf("after stop web:0: front %s pid %d, want Running pid %d", s["front"].State, s["front"].Pid, pids["front"])
	}
	d.ctlOK("start", "web:0")
	same("stop web:0 + start web:0", "web:1", "front")

	pids = d.running(all...)
	stopAt := time.Now()
	d.ctlOK("restart", "--with-dependents", "db")
	now := d.running(all...)
	for _, k := range all {
		if now[k] == pids[k] {
			t.Errorf("after restart --with-dependents db: %s kept pid %d", k, now[k])
		}
	}
	d.ctlOK("stop", "--with-dependents", "db")
	var order []string
	for _, ev := range d.events() {
		if ev.To == "Stopped" && !ev.Time.Before(stopAt) {
			name, _, _ := strings.Cut(ev.Program, ":") // web's two stop together, in either order
			order = append(order, name)
		}
	}
	// restart: front, then web's two; stop: the same, then db.
	if got, want := strings.Join(order, " "), "front web web front web web db"; got != want {
		t.Errorf("stopped in the order %q, want %q", got, want)
	}
	d.ctlOK("start", "db")
	d.running(all...)
	d.signal(15)
	d.wait(60 * time.Second)
}
