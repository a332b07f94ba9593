package integration

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLogFileOwnerAndMode: the log files of a program running as nobody,
// the current one and a rotated one, belong to root and to nobody's
// group, mode 0640: the program's user reads its own logs, and can neither
// write, truncate nor chmod them.
func TestLogFileOwnerAndMode(t *testing.T) {
	needRoot(t)
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	root := t.TempDir()
	must(t, os.Chmod(filepath.Dir(root), 0o755))
	must(t, os.Chmod(root, 0o755))
	logDir := filepath.Join(root, "logs") // root's, 0755: the program cannot write it
	must(t, os.Mkdir(logDir, 0o755))
	log := filepath.Join(logDir, "out.log")
	dir, file := writeConfig(t, fmt.Sprintf(`
[program.quiet]
command = ["sh", "-c", "for i in $(seq 1 400); do echo line $i of nobody; done; exec sleep 100000"]
user = "nobody"
[program.quiet.stdout]
console = false
file = %q
max_size = "4KiB"
max_files = 3
`, log))
	must(t, os.Chmod(filepath.Dir(dir), 0o755))
	must(t, os.Chmod(dir, 0o755))
	d := startDaemon(t, dir, file)
	eventually(t, "the 400 lines in the log", 60*time.Second, func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "line 400 of nobody")
	})
	for _, p := range []string{log, log + ".1"} {
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		if sys.Uid != 0 || int(sys.Gid) != gid || st.Mode() != 0o640 {
			t.Errorf("%s: owner %d:%d mode %v, want 0:%d -rw-r-----", p, sys.Uid, sys.Gid, st.Mode(), gid)
		}
	}
	// As nobody: the log reads, and does not write.
	as := func(script string) (string, error) {
		cmd := exec.Command("sh", "-c", script, "sh", log)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := as(`cat "$1"`); err != nil || !strings.Contains(out, "line 400 of nobody") {
		t.Errorf("nobody reading its log: %v\n%s", err, out)
	}
	if out, err := as(`echo forged >> "$1"`); err == nil {
		t.Errorf("nobody could append to its log:\n%s", out)
	}
	if out, err := as(`chmod 0666 "$1"`); err == nil {
		t.Errorf("nobody could chmod its log:\n%s", out)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(60 * time.Second); code != 0 {
		t.Errorf("supervise exited %d", code)
	}
}
