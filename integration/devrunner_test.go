package integration

import (
	"bytes"
	"context"
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
// (uid 65534) runs it in a project folder.
func startDevRunner(t *testing.T, dir string, env []string) *exec.Cmd {
	t.Helper()
	argv := asNobody(binary)
	cmd := exec.Command(argv[0], argv[1:]...)
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

// ctlIn runs supervisectl in dir with env, no --socket, as uid 65534.
func ctlIn(dir string, env []string, args ...string) (string, int) {
	argv := asNobody(append([]string{filepath.Join(filepath.Dir(binary), "supervisectl")}, args...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	return string(out), 0
}

// Two dev runners in two project folders run at once, each with its own
// control socket, and supervisectl run inside a folder (or below it)
// talks to that folder's runner without --socket; all as an ordinary user.
func TestTwoProjectsAtOnce(t *testing.T) {
	needRoot(t) // to become uid 65534
	runtimeDir := nobodyDir(t)
	env := devEnv(runtimeDir)
	root := nobodyDir(t)
	for _, name := range []string{"alpha", "beta"} {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, "src", "deep"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{dir, filepath.Join(dir, "src"), filepath.Join(dir, "src", "deep")} {
			os.Chown(d, 65534, 65534)
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

// asNobody wraps argv to run as uid/gid 65534, an ordinary user.
func asNobody(argv ...string) []string {
	return append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, argv...)
}

// nobodyDir makes a directory owned by uid 65534, mode 0700.
func nobodyDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(filepath.Dir(d), 0o755); err != nil { // t.TempDir's parent is 0700
		t.Fatal(err)
	}
	if err := os.Chown(d, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// A developer's run, as an ordinary user on a machine where root's
// supervise made the cgroup tree: both processes run and print, the .env
// is interpolated, and supervise speaks in short human lines, with no
// structured log records among them.
func TestDevRunnerAsAnOrdinaryUser(t *testing.T) {
	needRoot(t) // to become uid 65534
	dir := nobodyDir(t)
	runtimeDir := nobodyDir(t)
	files := map[string]string{
		"Procfile": "web: echo \"web says $GREETING\"; sleep 0.3\nworker: echo worker up; sleep 0.3\n",
		".env":     "NAME=dev\nGREETING=\"hello ${NAME}\"\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chown(p, 65534, 65534)
	}
	argv := asNobody(binary, "--keep-running")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, append(devEnv(runtimeDir), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	console := string(out)
	if err != nil {
		t.Fatalf("supervise as uid 65534: %v\n%s", err, console)
	}
	for _, want := range []string{"web says hello dev", "worker up", "web    | started (pid", "worker | exited with code 0", "supervise | exiting with code 0"} {
		if !strings.Contains(console, want) {
			t.Errorf("the console lacks %q:\n%s", want, console)
		}
	}
	if strings.Contains(console, "level=") || strings.Contains(console, "StartError") {
		t.Errorf("the console has structured records or a failed start:\n%s", console)
	}
}
