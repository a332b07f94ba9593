package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Programs whose instance 0 prints its ready line and whose others never
// do: db (one instance) is never ready, web:0 is, web:1 is not.
const readyzNamesConfig = `
[program.db]
command = ["sleep", "100000"]
ready_log_line = "never printed"
[program.web]
command = ["sh", "-c", "if [ \"$SUPERVISE_INSTANCE\" = 0 ]; then echo listening; fi; exec sleep 100000"]
instances = 2
ready_log_line = "listening"
`

// /readyz names a single-instance program as every other place does,
// "db", and an instance of a multi-instance program "web:1".
func TestReadyzNamesASingleInstanceProgramAsStatusDoes(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, readyzNamesConfig)
	d := startDaemon(t, dir, file, "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr()
	d.running("db", "web:0", "web:1")
	code, body := get(t, "GET", base+"/readyz", nil)
	if code != 503 || !strings.Contains(body, "db (Running)") || !strings.Contains(body, "web:1 (Running)") || strings.Contains(body, "db:0") {
		t.Errorf("/readyz: %d %q, want 503 naming db (as status does) and web:1", code, body)
	}
	if code, body := get(t, "GET", base+"/readyz?program=db", nil); code != 503 || !strings.Contains(body, "db (Running)") {
		t.Errorf("/readyz?program=db: %d %q", code, body)
	}
}

// /readyz?program= takes an instance as well as a program.
func TestReadyzTakesAnInstance(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, readyzNamesConfig)
	d := startDaemon(t, dir, file, "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr()
	eventually(t, "web:0 ready in /metrics", 60*time.Second, func() bool {
		_, body := get(t, "GET", base+"/metrics", nil)
		v, ok := metricValue(body, `supervise_program_ready{program="web",instance="0"}`)
		return ok && v == 1
	})
	for _, tc := range []struct {
		name, want string
		code       int
	}{
		{"web:0", "ok", 200},
		{"web:1", "web:1 (Running)", 503},
		{"web", "web:1 (Running)", 503},
		{"web:2", "no program", 404},
		{"db:0", "no program", 404}, // db has one instance: it is "db"
		{"nope", "no program", 404},
	} {
		if code, body := get(t, "GET", base+"/readyz?program="+tc.name, nil); code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("/readyz?program=%s: %d %q, want %d %q", tc.name, code, body, tc.code, tc.want)
		}
	}
}

// `ready` is in every row of status --json, with the metric's meaning: a
// running program without a readiness check is ready, a stopped one is
// not.
func TestStatusJSONAlwaysSaysReady(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, `
[program.plain]
command = ["sleep", "100000"]
[program.idle]
command = ["sleep", "100000"]
autostart = false
`)
	d := startDaemon(t, dir, file, "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr()
	d.running("plain")
	out, code := d.ctl("status", "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d %s", code, out)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	_, metrics := get(t, "GET", base+"/metrics", nil)
	for _, row := range rows {
		name, _ := row["name"].(string)
		ready, ok := row["ready"].(bool)
		if !ok {
			t.Errorf("status --json: %s has no ready: %v", name, row)
			continue
		}
		gauge, gok := metricValue(metrics, fmt.Sprintf(`supervise_program_ready{program=%q,instance="0"}`, name))
		if !gok || (gauge == 1) != ready {
			t.Errorf("%s: status says ready=%v, /metrics says %v (%v)", name, ready, gauge, gok)
		}
		if want := name == "plain"; ready != want {
			t.Errorf("%s: ready=%v, want %v", name, ready, want)
		}
	}
	if len(rows) != 2 {
		t.Errorf("status --json: %d rows, want 2: %s", len(rows), out)
	}
}

// A program scaled to 0 is still a program: status says it has no
// instance, /readyz?program= knows it (nothing of it is not ready).
func TestStatusOfAProgramScaledToZero(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, `
[program.web]
command = ["sleep", "100000"]
instances = 2
[program.other]
command = ["sleep", "100000"]
`)
	d := startDaemon(t, dir, file, "--http", "127.0.0.1:0")
	base := "http://" + d.httpAddr()
	d.running("web:0", "web:1")
	d.ctlOK("scale", "web=0")
	out, code := d.ctl("status", "web")
	if code != 0 || !strings.Contains(out, "web") || !strings.Contains(out, "0 instances") {
		t.Errorf("status web after scale web=0: exit %d %q, want it to say web has 0 instances", code, out)
	}
	if out, code := d.ctl("status", "--json", "web"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("status --json web after scale web=0: exit %d %q, want []", code, out)
	}
	if code, body := get(t, "GET", base+"/readyz?program=web", nil); code != 200 {
		t.Errorf("/readyz?program=web after scale web=0: %d %q, want 200", code, body)
	}
	// A command on it says why nothing happens.
	if out, code := d.ctl("start", "web"); code == 0 || !strings.Contains(out, "0 instances") {
		t.Errorf("start web after scale web=0: exit %d %q, want it to say web has 0 instances", code, out)
	}
	if out, code := d.ctl("status", "nope"); code == 0 || !strings.Contains(out, "unknown program") {
		t.Errorf("status nope: exit %d %q, want unknown program", code, out)
	}
}
