package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// devEnv is the environment of a developer's shell: a private runtime
// directory, no socket named.
func devEnv(runtimeDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SUPERVISE_SOCKET=") && !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
			env = append(env, kv)
		}
	}
	return append(env, "XDG_RUNTIME_DIR="+runtimeDir)
}

// startDevRunner runs `supervise` with no arguments in dir, as a developer
// runs it in a project folder.
func startDevRunner(t *testing.T, dir string, env []string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("supervise in %s:\n%s", dir, tail(out.String(), 30))
		}
	})
	return cmd
}

// ctlIn runs supervisectl in dir with env, no --socket.
func ctlIn(dir string, env []string, args ...string) (string, int) {
	cmd := exec.Command(filepath.Join(filepath.Dir(binary), "supervisectl"), args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	return string(out), 0
}

// Two dev runners in two project folders run at once, each with its own
// control socket, and supervisectl run inside a folder (or below it)
// talks to that folder's runner without --socket.
func TestTwoProjectsAtOnce(t *testing.T) {
	runtimeDir := t.TempDir()
	env := devEnv(runtimeDir)
	root := t.TempDir()
	for _, name := range []string{"alpha", "beta"} {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, "src", "deep"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "Procfile"), []byte(name+"web: sleep 1000\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		startDevRunner(t, dir, env)
	}
	for _, name := range []string{"alpha", "beta"} {
		other := map[string]string{"alpha": "betaweb", "beta": "alphaweb"}[name]
		sub := filepath.Join(root, name, "src", "deep")
		eventually(t, name+"'s runner answers from "+sub, 30*time.Second, func() bool {
			out, code := ctlIn(sub, env, "status")
			return code == 0 && strings.Contains(out, name+"web") && strings.Contains(out, "Running")
		})
		if out, _ := ctlIn(sub, env, "status"); strings.Contains(out, other) {
			t.Errorf("status in %s shows the other project's %s:\n%s", name, other, out)
		}
	}
	// Outside any project, supervisectl looks for the default socket.
	if out, code := ctlIn(root, env, "status"); code != 3 {
		t.Errorf("status outside the projects: exit %d, want 3 (no supervisor at the default socket):\n%s", code, out)
	}
	entries, _ := os.ReadDir(filepath.Join(runtimeDir, "supervise"))
	st, err := os.Stat(filepath.Join(runtimeDir, "supervise"))
	if err != nil || st.Mode().Perm() != 0o700 || len(entries) != 2 {
		t.Errorf("project sockets' directory: %v, mode %v, %d entries; want 0700 with 2 sockets", err, st.Mode().Perm(), len(entries))
	}
}
