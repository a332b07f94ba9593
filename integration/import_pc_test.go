package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A real project's process-compose.yml (wanderer's, in the importer's
// testdata), its commands replaced by stand-ins that log their start and
// environment and, for the two servers, serve their health path over
// HTTP a second after they start: `supervise import process-compose`
// (finding the file as process-compose does) writes a config that
// `supervise check` takes, and the real binary starts the processes in
// process-compose's order: each install or build completed before its
// server, the web app once both servers answered their readiness probes,
// each with the file's environment.
func TestImportProcessComposeRunsInOrder(t *testing.T) {
	src, err := os.ReadFile("../export/testdata/process-compose/flomp-wanderer.yml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "order.log")
	meili, db := freePort(t), freePort(t)
	for _, d := range []string{"search", "db/api", "web"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"search/health", "db/api/health"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("ok\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// each stand-in logs "NAME TIME ENV…"; $$X is process-compose's way
	// to leave $X to the shell, which finds the program's environment
	logLine := func(name, env string) string {
		return fmt.Sprintf(`echo "%s $(date +%%s.%%N) $$PC_PROC_NAME %s" >> %s`, name, env, log)
	}
	server := func(name string, port int) string {
		return logLine(name, "$$MEILI_NO_ANALYTICS") + fmt.Sprintf("; sleep 1; exec python3 -m http.server %d --bind 127.0.0.1", port)
	}
	stand := map[string]string{
		"type meilisearch >/dev/null 2>&1 || brew install meilisearch": logLine("meilisearch-install", "$$ORIGIN"),
		"meilisearch":             server("meilisearch", meili),
		"go mod tidy && go build": logLine("db-build", "$$MEILI_URL") + "; sleep 0.5",
		"./pocketbase serve":      server("db", db),
		"npm install":             logLine("web-build", "$$ORIGIN"),
		"npm run dev":             logLine("web", "$$ORIGIN") + "; exec sleep 1000",
	}
	text := string(src)
	for from, to := range stand {
		old := "    command: " + from + "\n"
		if !strings.Contains(text, old) {
			t.Fatalf("the file has no %q", old)
		}
		text = strings.Replace(text, old, "    command: '"+to+"'\n", 1)
	}
	text = strings.Replace(text, "port: 7700", "port: "+strconv.Itoa(meili), 1)
	text = strings.Replace(text, "port: 8090", "port: "+strconv.Itoa(db), 1)
	if err := os.WriteFile(filepath.Join(dir, "process-compose.yml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	toml := filepath.Join(dir, "supervise.toml")
	imp := exec.Command(binary, "import", "process-compose", "-o", toml) // the file found as process-compose finds it
	imp.Dir = dir
	msg, err := imp.CombinedOutput()
	if err != nil {
		t.Fatalf("import: %v\n%s", err, msg)
	}
	// a key without an exact equivalent is a warning naming process and key
	if w := "warning: program meilisearch: depends_on.meilisearch-install: process_completed becomes completed"; !strings.Contains(string(msg), w) {
		t.Errorf("the import did not warn %q:\n%s", w, msg)
	}
	if out, code := runCheck(t, toml); code != 0 {
		t.Fatalf("supervise check refused the import (%d):\n%s", code, out)
	}
	d := startDaemon(t, dir, toml)
	started := map[string][]string{}
	eventually(t, "every process to start", 90*time.Second, func() bool {
		started = map[string][]string{}
		for _, l := range readLines(t, log) {
			f := strings.Fields(l)
			if len(f) >= 3 {
				started[f[0]] = f[1:]
			}
		}
		return len(started) == 6
	})
	at := func(name string) float64 {
		v, err := strconv.ParseFloat(started[name][0], 64)
		if err != nil {
			t.Fatalf("%s: bad time %q", name, started[name][0])
		}
		return v
	}
	// a lower bound only: a slow machine widens every gap
	for _, o := range []struct {
		before, after string
		gap           float64 // the servers answer a second after they log
	}{
		{"meilisearch-install", "meilisearch", 0},
		{"db-build", "db", 0.5},
		{"web-build", "web", 0},
		{"db", "web", 1},
		{"meilisearch", "web", 1},
	} {
		if at(o.after)-at(o.before) < o.gap {
			t.Errorf("%s started %.3fs after %s, want at least %.1fs", o.after, at(o.after)-at(o.before), o.before, o.gap)
		}
	}
	for name, env := range map[string]string{
		"meilisearch-install": "http://localhost:5173", // the file's environment
		"db-build":            "http://127.0.0.1:7700",
		"meilisearch":         "true",
		"web":                 "http://localhost:5173",
	} {
		if got := started[name]; len(got) < 3 || got[1] != name || got[2] != env {
			t.Errorf("%s logged %q, want its name (PC_PROC_NAME) and %q", name, got, env)
		}
	}
	if t.Failed() {
		t.Logf("the import:\n%s", readFile(t, toml))
	}
	_ = d
}

func readFile(t *testing.T, f string) string {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
