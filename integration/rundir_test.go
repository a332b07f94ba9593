package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// notifyAsNobody runs `supervise run` with a program that says READY=1
// over sd_notify as uid 65534, waits for it to be ready, and stops it.
func notifyAsNobody(t *testing.T) {
	t.Helper()
	dir, file := writeConfig(t, `
[program.svc]
command = ["sh", "-c", "exec /usr/bin/python3 -c \"$SEND; import time; time.sleep(1000)\" \"$NOTIFY_SOCKET\" 'READY=1'"]
user = "nobody"
notify = "sd_notify"
env = { SEND = '''`+sendNotify+`''' }
`)
	must(t, os.Chmod(filepath.Dir(dir), 0o755))
	must(t, os.Chmod(dir, 0o755))
	d := startDaemon(t, dir, file)
	eventually(t, "svc (as nobody) ready over sd_notify", 60*time.Second, func() bool { return isReady(d.healthStatus()["svc"]) })
	d.signal(syscall.SIGTERM)
	if code := d.wait(60 * time.Second); code != 0 {
		t.Fatalf("supervise run exited %d", code)
	}
}

// TestRootDevRunnerAndNotifySocketsShareRun: as root without
// XDG_RUNTIME_DIR, the dev runner's control sockets and the sd_notify
// sockets both live under /run/supervise, and neither use may lock out
// the other: a dev runner starts after a program with sd_notify has run,
// and, while it runs, a program running as nobody can still reach its
// notify socket. The control sockets' directory is root's alone (0700).
func TestRootDevRunnerAndNotifySocketsShareRun(t *testing.T) {
	needRoot(t)
	needPython(t)
	notifyAsNobody(t)

	project := t.TempDir()
	must(t, os.WriteFile(filepath.Join(project, "Procfile"), []byte("web: sleep 100000\n"), 0o644))
	env := noRuntimeDirEnv()
	runner := startDev(t, project, env)
	eventually(t, "the dev runner's web running", 60*time.Second, func() bool {
		select {
		case <-runner.done:
			t.Fatalf("the root dev runner did not start:\n%s", runner.out.String())
		default:
		}
		out, _, code := devCtl(t, project, env, "status", "web")
		return code == 0 && strings.Contains(out, "Running")
	})
	socks, _ := filepath.Glob("/run/supervise/*/" + filepath.Base(project) + "-*.sock")
	direct, _ := filepath.Glob("/run/supervise/" + filepath.Base(project) + "-*.sock")
	socks = append(socks, direct...)
	if len(socks) != 1 {
		t.Fatalf("the dev runner's socket under /run/supervise: found %q", socks)
	}
	if st, err := os.Stat(filepath.Dir(socks[0])); err != nil || st.Mode().Perm() != 0o700 || st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("control socket directory %s: %v (%v), want root's, 0700", filepath.Dir(socks[0]), st.Mode(), err)
	}

	// While the dev runner runs: a program as nobody still reaches its
	// notify socket.
	notifyAsNobody(t)
}
