package export

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/supervise-dev/supervise/config"
)

// Every warning path of the Kubernetes export: a config that needs it,
// and the key it names. (The documents themselves are decoded strictly
// into the k8s.io/api types in integration/conformance.)
func TestKubernetesWarnings(t *testing.T) {
	base := "[program.p]\ncommand = \"sleep 1\"\n"
	for _, tc := range []struct {
		name, src, key string
	}{
		{"exit_on", "[supervisor]\nexit_on = [\"p\"]\n" + base, "supervisor.exit_on"},
		{"autostart deployment", base + "autostart = false\n", "autostart"},
		{"autostart job", base + "autostart = false\nrestart = \"never\"\n", "autostart"},
		{"on-failure job", base + "restart = \"on-failure\"\n", "restart"},
		{"http pre_start", base + "hooks.pre_start = { http = \"http://127.0.0.1:1/x\" }\n", "hooks.pre_start"},
		{"completed dependency", base + "restart = \"never\"\n[program.q]\ncommand = \"x\"\ndepends_on = { p = \"completed\" }\n", "depends_on.p"},
		{"dependency without a port", base + "[program.q]\ncommand = \"x\"\ndepends_on = [\"p\"]\n", "depends_on.p"},
		{"notify", base + "notify = \"sd_notify\"\n", "notify"},
		{"ready_log_line", base + "ready_log_line = \"up\"\n", "ready_log_line"},
		{"watchdog", base + "notify = \"sd_notify\"\nwatchdog = \"10s\"\n", "watchdog"},
		{"env_file", base + "env_file = \"e.env\"\n", "env_file"},
		{"pids_max", base + "sandbox = { pids_max = 64 }\n", "sandbox.pids_max"},
		{"namespaces", base + "sandbox = { namespaces = [\"net\"] }\n", "sandbox.namespaces"},
		{"rlimits", base + "sandbox = { rlimits = { nofile = 1024 } }\n", "sandbox.rlimits"},
		{"unknown user", base + "user = \"no-such-user-here\"\n", "user"},
		{"unknown group", base + "group = \"no-such-group-here\"\n", "group"},
		{"groups", base + "groups = [\"adm\"]\n", "groups"},
		{"umask", base + "sandbox = { umask = \"0027\" }\n", "sandbox.umask"},
		{"expect_status", base + "probes.readiness = { http = { url = \"http://127.0.0.1:8080/\", expect_status = 204 } }\n", "probes.readiness.http.expect_status"},
		{"remote tcp", base + "probes.readiness = { tcp = \"db.internal:5432\" }\n", "probes.readiness.tcp"},
		{"sub-second period", base + "probes.readiness = { tcp = 1, period = \"500ms\" }\n", "probes.readiness"},
		{"remote http", base + "probes.liveness = { http = \"http://web.internal:8080/\" }\n", "probes.liveness"},
		{"hook method", base + "hooks.pre_stop = { http = { url = \"http://127.0.0.1:1/drain\", method = \"POST\" } }\n", "hooks.pre_stop.http.method"},
		{"post_stop", base + "hooks.post_stop = { command = \"true\" }\n", "hooks.post_stop"},
		{"stop_signal", base + "stop_signal = \"QUIT\"\n", "stop_signal"},
		{"backoff", base + "backoff = { initial = \"1s\" }\n", "backoff"},
		{"restart_rules", base + "restart_rules = [{ exit_codes = { operator = \"In\", values = [3] } }]\n", "restart_rules"},
		{"watch", base + "watch = { paths = [\".\"] }\n", "watch"},
		{"critical", base + "critical = true\n", "critical"},
		{"sidecar", base + "sidecar = true\n", "sidecar"},
		{"log file", base + "stdout = { file = \"/tmp/p.log\" }\n", "stdout"},
		{"success codes", base + "success_exit_codes = [0, 3]\n", "success_exit_codes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "e.env"), []byte("X=1\n"), 0o644)
			cfg, err := config.Parse(filepath.Join(dir, "supervise.toml"), []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			out, warns, err := Kubernetes(cfg, KubernetesOptions{Image: "img", Name: "app"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(out), "apiVersion: ") {
				t.Fatalf("output:\n%s", out)
			}
			for _, w := range warns {
				if w.Key == tc.key {
					return
				}
			}
			t.Errorf("no warning on %s; got %v", tc.key, warns)
		})
	}
}

func TestKubernetesOptions(t *testing.T) {
	cfg := &config.Config{}
	if _, _, err := Kubernetes(cfg, KubernetesOptions{Name: "app"}); err == nil {
		t.Error("no image accepted")
	}
	if _, _, err := Kubernetes(cfg, KubernetesOptions{Image: "i", Name: "App_1"}); err == nil {
		t.Error("a name that is no DNS label accepted")
	}
	if got := DNSLabel("My_Web.Server"); got != "my-web-server" {
		t.Errorf("DNSLabel: %q", got)
	}
}

// YAML's \xNN is a code point, not a byte: a value that is not UTF-8
// cannot be written as the bytes supervise would pass, and is refused.
func TestKubernetesRefusesInvalidUTF8(t *testing.T) {
	cfg := parse(t, "[program.p]\ncommand = [\"/bin/echo\", \"x\"]\nenv = { A = \"1\" }\n")
	cfg.Programs[0].Env["A"] = "a\xffb"
	if out, _, err := Kubernetes(cfg, KubernetesOptions{Image: "i", Name: "app"}); err == nil || !strings.Contains(err.Error(), `"a\xffb"`) {
		t.Errorf("exported (%v):\n%s", err, out)
	}
	cfg.Programs[0].Env["A"] = "1"
	cfg.Programs[0].Command[1] = "\xc3"
	if _, _, err := Kubernetes(cfg, KubernetesOptions{Image: "i", Name: "app", Pod: true}); err == nil {
		t.Error("exported a command word that is not UTF-8")
	}
}
