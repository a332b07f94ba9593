package integration

import (
	"strings"
	"testing"
)

// The shell's PORT is the first process type's, as foreman and honcho
// take it; a port outside 1–65535, given or reached by the later types
// and instances, is refused before anything starts.
func TestDevRunnerPorts(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Procfile": "web: echo web port $PORT\nworker: echo worker port $PORT\n",
	})
	env := append(devEnv(t.TempDir()), "NO_COLOR=1")
	out, code := runDev(t, dir, append(env, "PORT=9000"), "--keep-running")
	if code != 0 || !strings.Contains(out, "web    | web port 9000") || !strings.Contains(out, "worker | worker port 9100") {
		t.Errorf("PORT=9000 supervise: exit %d; want web on 9000 and worker on 9100:\n%s", code, out)
	}
	out, code = runDev(t, dir, append(env, "PORT=9000"), "--keep-running", "-p", "7000")
	if code != 0 || !strings.Contains(out, "web    | web port 7000") {
		t.Errorf("-p 7000 over PORT=9000: exit %d:\n%s", code, out)
	}
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"-p", "-5"}, "PORT=", "--port: must be from 1 to 65535 (got -5)"},
		{[]string{"-p", "70000"}, "PORT=", "--port: must be from 1 to 65535 (got 70000)"},
		{nil, "PORT=99999", "$PORT: must be from 1 to 65535 (got \"99999\")"},
		{[]string{"-p", "65500"}, "PORT=", "Procfile:2: worker: PORT 65600 is past 65535"},
		{[]string{"-p", "65400", "-m", "web=200"}, "PORT=", "Procfile:1: web: PORT 65599 is past 65535"},
	} {
		out, code := runDev(t, dir, append(env, c.env), append([]string{"--keep-running"}, c.args...)...)
		if code != 2 || !strings.Contains(out, c.want) || strings.Contains(out, "| started") {
			t.Errorf("%s supervise %v: exit %d; want 2 and %q, nothing started:\n%s", c.env, c.args, code, c.want, out)
		}
	}
}
