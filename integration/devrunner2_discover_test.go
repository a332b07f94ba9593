package integration

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// supervisectl finds the dev runner of a folder whose Procfile has another
// name (Rails 7's bin/dev runs `-f Procfile.dev`), from the folder and
// from below it, with no --socket.
func TestSupervisectlFindsProcfileDevRunner(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Procfile.dev": "web: sleep 1000\ncss: sleep 1000\n",
		"app/x/keep":   "",
	})
	env := append(devEnv(t.TempDir()), "NO_COLOR=1")
	startDev(t, dir, env, "-f", "Procfile.dev")
	ctl := func(wd string) (string, error) {
		cmd := exec.Command(ctlBinary, "status")
		cmd.Dir, cmd.Env = wd, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, wd := range []string{dir, filepath.Join(dir, "app", "x")} {
		var out string
		var err error
		eventually(t, "supervisectl status in "+wd, 30*time.Second, func() bool {
			out, err = ctl(wd)
			return err == nil && strings.Contains(out, "web") && strings.Contains(out, "css")
		})
		if err != nil {
			t.Fatalf("supervisectl status in %s: %v\n%s", wd, err, out)
		}
	}
	// Its parent is no project: the default socket, where nobody listens.
	if out, err := ctl(filepath.Dir(dir)); err == nil {
		t.Errorf("supervisectl status above the project found a supervisor:\n%s", out)
	}
}
