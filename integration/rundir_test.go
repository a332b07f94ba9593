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
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 to send sd_notify messages")
	}
	notifyAsNobody(t)

	project := t.TempDir()
	must(t, os.WriteFile(filepath.Join(project, "Procfile"), []byte("web: sleep 100000\n"), 0o644))
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SUPERVISE_SOCKET=") && !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
			env = append(env, kv)
		}
	}
	runner := exec.Command(binary)
	runner.Dir, runner.Env = project, env
	var out syncBuffer
	runner.Stdout, runner.Stderr = &out, &out
	runner.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(t, runner.Start())
	exited := make(chan struct{})
	go func() { runner.Wait(); close(exited) }()
	t.Cleanup(func() {
		runner.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			syscall.Kill(-runner.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("the dev runner:\n%s", tail(out.String(), 30))
		}
	})
	ctlHere := func(args ...string) (string, error) {
		c := exec.Command(filepath.Join(filepath.Dir(binary), "supervisectl"), args...)
		c.Dir, c.Env = project, env
		var b bytes.Buffer
		c.Stdout, c.Stderr = &b, &b
		err := c.Run()
		return b.String(), err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := ctlHere("status", "web")
		if err == nil && strings.Contains(st, "Running") {
			break
		}
		select {
		case <-exited:
			t.Fatalf("the root dev runner did not start:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dev runner's web not running after 60s: %v\n%s", err, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
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
