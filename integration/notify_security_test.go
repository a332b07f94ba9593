package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sendNotify = `import os,socket,sys; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.connect(sys.argv[1]); s.send(sys.argv[2].encode())`

// A program running as another user can say READY=1 (its socket is its
// own), and a process outside it that reaches the socket — here another
// process of the same uid — is not heard.
func TestNotifyAsAnotherUserAndOnlyFromTheProgram(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, `
[program.svc]
# The main process itself sends: a sender that exits at once may be gone
# before the supervisor can tell it is the program's.
command = ["sh", "-c", "echo \"$NOTIFY_SOCKET\" > sockpath; until [ -f go ]; do sleep 0.05; done; exec /usr/bin/python3 -c \"$SEND; import time; time.sleep(1000)\" \"$NOTIFY_SOCKET\" 'READY=1'"]
user = "nobody"
notify = "sd_notify"
env = { SEND = '''`+sendNotify+`''' }
`)
	must(t, os.Chmod(filepath.Dir(dir), 0o755))
	must(t, os.Chmod(dir, 0o777))
	d := startDaemon(t, dir, file)
	var sock string
	eventually(t, "the program to say where its socket is", 60*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "sockpath"))
		sock = strings.TrimSpace(string(b))
		return sock != ""
	})
	if !strings.HasPrefix(sock, "/run/supervise/") {
		t.Errorf("NOTIFY_SOCKET=%s, want a private directory under /run/supervise", sock)
	}
	if st, err := os.Stat(filepath.Dir(sock)); err != nil || st.Mode().Perm() != 0o711 {
		t.Errorf("socket directory: %v %v, want mode 0711", st.Mode(), err)
	}

	// Someone else as nobody, not in the program: heard by no one.
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"/usr/bin/python3", "-c", sendNotify, sock, "READY=1\nSTATUS=forged").CombinedOutput()
	if err != nil {
		t.Fatalf("the outside sender could not even send (%v): %s", err, out)
	}
	eventually(t, "the outside message refused", 60*time.Second, func() bool {
		return strings.Contains(d.stderr.String(), "sd_notify message from outside the program ignored")
	})
	if st := d.healthStatus()["svc"]; isReady(st) || strings.Contains(st.Message, "forged") {
		t.Fatalf("an outside process made svc ready or set its status: %+v", st)
	}

	// The program itself, as nobody: heard.
	must(t, writeFileNow(filepath.Join(dir, "go")))
	eventually(t, "svc ready from its own READY=1", 60*time.Second, func() bool { return isReady(d.healthStatus()["svc"]) })
	d.signal(15)
	d.wait(60 * time.Second)
}
