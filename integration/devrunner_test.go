package integration

import (
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
	return append(noRuntimeDirEnv(), "XDG_RUNTIME_DIR="+runtimeDir)
}

// noRuntimeDirEnv is the test's environment without XDG_RUNTIME_DIR and
// SUPERVISE_SOCKET: a shell that names neither.
func noRuntimeDirEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SUPERVISE_SOCKET=") && !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
			env = append(env, kv)
		}
	}
	return env
}

// startDevRunner runs `supervise` with no arguments in dir, as a developer
// (uid 65534) runs it in a project folder.
func startDevRunner(t *testing.T, dir string, env []string) *devRun {
	t.Helper()
	return startRunner(t, dir, env, asNobody(binary)...)
}

// ctlIn runs supervisectl in dir with env, no --socket, as uid 65534.
func ctlIn(dir string, env []string, args ...string) (string, int) {
	argv := asNobody(append([]string{ctlBinary}, args...)...)
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

// foreman's verbs: run-once runs one command with the .env (interpolated)
// and a PORT, and exits with its status; start runs only the named
// process types; -d runs in another folder, -e reads other env files, and
// --watch restarts a process when a file in the folder changes.
func TestForemanVerbs(t *testing.T) {
	dir := t.TempDir()
	env := devEnv(t.TempDir())
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".env", "NAME=dev\nGREETING=\"hi ${NAME}\"\n")
	write("other.env", "PORT=7000\nGREETING=other\n")
	write("Procfile", "web: echo \"web $GREETING $PORT\"; sleep 0.2\nworker: echo worker up; sleep 0.2\nclock: echo clock up; sleep 0.2\n")
	run := func(args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, args...)
		cmd.Dir, cmd.Env = t.TempDir(), append(env, "NO_COLOR=1", "PORT=") // elsewhere: -d names the folder
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return string(out), 0
	}
	if out, code := run("run-once", "-d", dir, "sh", "-c", `echo "$GREETING port=$PORT"; exit 4`); code != 4 || out != "hi dev port=5000\n" {
		t.Errorf("run-once: exit %d, %q; want 4, \"hi dev port=5000\"", code, out)
	}
	if out, code := run("run-once", "-d", dir, "-e", "other.env", `echo "[$GREETING] $PORT"`); code != 0 || out != "[other] 7000\n" {
		t.Errorf("run-once -e: exit %d, %q", code, out)
	}
	if _, code := run("run-once", "-d", dir, "no-such-command"); code != 127 {
		t.Errorf("run-once of a missing command: exit %d, want 127", code)
	}
	out, code := run("start", "-d", dir, "--keep-running", "web", "clock")
	if code != 0 || !strings.Contains(out, "web   | web hi dev 5000") || !strings.Contains(out, "clock | clock up") || strings.Contains(out, "worker") {
		t.Errorf("start web clock: exit %d:\n%s", code, out)
	}
	if out, code := run("start", "-d", dir, "nope"); code != 2 || !strings.Contains(out, `no program "nope"`) {
		t.Errorf("start nope: exit %d:\n%s", code, out)
	}

	// --watch: web restarts when a file in the folder changes.
	write("Procfile", "web: echo \"web up $$\"; sleep 1000\n")
	argv := []string{binary, "-d", dir, "--watch"}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, append(env, "NO_COLOR=1")
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	eventually(t, "web up", 30*time.Second, func() bool { return strings.Count(buf.String(), "web up") == 1 })
	write("app.py", "print(1)\n")
	eventually(t, "web restarted after app.py changed", 30*time.Second, func() bool {
		return strings.Count(buf.String(), "web up") == 2 && strings.Contains(buf.String(), "web | files changed (app.py); restarting")
	})
}

// A project's limits are for production: the dev runner of an ordinary
// user who may not create cgroups runs the program without them, and says
// so once. (`supervise run -c FILE` refuses instead; see the non-root
// cgroup test.)
func TestDevRunnerDropsLimitsItCannotApply(t *testing.T) {
	needRoot(t) // to become uid 65534
	dir := nobodyDir(t)
	p := filepath.Join(dir, "supervise.toml")
	if err := os.WriteFile(p, []byte("[program.job]\ncommand = [\"echo\", \"job ran\"]\nrestart = \"never\"\nsandbox = { memory_max = \"64MiB\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(p, 65534, 65534)
	argv := asNobody(binary)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, append(devEnv(nobodyDir(t)), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "job | job ran") || strings.Count(string(out), "limits not applied") != 1 {
		t.Fatalf("dev runner as uid 65534 with a memory limit: %v\n%s", err, out)
	}
}
