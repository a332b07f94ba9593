package export

import (
	"strings"
	"testing"
)

// --mode pod: each program's role (init container, native sidecar,
// container, CronJob beside the Pod), the warnings each role has, the
// Pod's restartPolicy and grace, and the Service of the probes' ports.
func TestKubernetesPodMode(t *testing.T) {
	cfg := parse(t, `
[program.migrate]
command = ["migrate"]
restart = "never"
probes.readiness.tcp = 1
hooks.post_start = { command = ["echo", "up"] }

[program.db]
command = ["db"]
restart = "on-failure"
probes.readiness.tcp = 5432
stop_timeout = "30s"

[program.log]
command = ["log"]
sidecar = true

[program.web]
command = ["web"]
restart = "on-failure"
depends_on = { migrate = "completed", db = "ready", log = "running" }
probes.liveness = { http = "http://127.0.0.1:8080/health" }
instances = 2
autostart = false
hooks.pre_start = { command = ["prep"] }
sandbox = { hostname = "w", namespaces = ["uts"] }

[program.worker]
command = ["worker"]
restart = "always"
depends_on = { migrate = "running" }

[program.report]
command = ["report"]
schedule = "30 6 * * *"
`)
	out, ws, err := Kubernetes(cfg, KubernetesOptions{Image: "app:1", Name: "demo", Pod: true})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	pod, _, _ := strings.Cut(s[strings.Index(s, `kind: "Pod"`):], "\n---")
	inits, containers, ok := strings.Cut(pod, "\n  containers:")
	if !ok {
		t.Fatalf("no containers in the Pod:\n%s", s)
	}
	for _, want := range []string{`name: "migrate"`, `name: "db"`, `name: "log"`, `restartPolicy: "Always"`, "startupProbe:"} {
		if !strings.Contains(inits, want) {
			t.Errorf("the init containers lack %s:\n%s", want, inits)
		}
	}
	if i, j, k := strings.Index(inits, `"migrate"`), strings.Index(inits, `"db"`), strings.Index(inits, `"log"`); i > j || j > k {
		t.Errorf("init containers not in dependency order:\n%s", inits)
	}
	for _, want := range []string{`name: "web"`, `name: "worker"`, "livenessProbe:", "terminationGracePeriodSeconds: 30"} {
		if !strings.Contains(containers, want) {
			t.Errorf("the containers and spec lack %s:\n%s", want, containers)
		}
	}
	migrate, _, _ := strings.Cut(inits[strings.Index(inits, `name: "migrate"`):], `name: "db"`)
	if strings.Contains(migrate, "Probe") || strings.Contains(migrate, "lifecycle") {
		t.Errorf("a run-to-completion init container keeps a probe or a lifecycle:\n%s", migrate)
	}
	for _, want := range []string{`kind: "CronJob"`, `kind: "Service"`, "port: 8080", "port: 5432"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %s:\n%s", want, s)
		}
	}
	for _, want := range []string{
		"program migrate: depends_on: a one-shot runs to its end",
		`program migrate: restart: "never": an init container that fails is retried`,
		"program migrate: readinessProbe: dropped",
		"program migrate: lifecycle: dropped",
		`program db: restart: "on-failure": a native sidecar is restarted`,
		"program web: instances: one Pod runs one container per program",
		"program web: hooks.pre_start: not exported in a Pod",
		"program web: autostart: false: every container of the Pod starts with it",
		"program web: sandbox.hostname: a Pod has one hostname",
		`program web: restart: "on-failure": the Pod's restartPolicy (Always) is every container's`,
	} {
		found := false
		for _, w := range ws {
			found = found || strings.HasPrefix(w.String(), want)
		}
		if !found {
			t.Errorf("no warning %q among %q", want, ws)
		}
	}
}
