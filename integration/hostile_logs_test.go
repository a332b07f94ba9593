package integration

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A program running as nobody owns its log directory and attacks the
// root supervisor through it: it swaps its log for a symlink to a root
// file (what would be /etc/cron.d/x), for a FIFO, and puts a non-empty
// directory at a rotated name so rotation's rename fails. The root file
// must stay untouched, the log must stay within its size, and the stop
// must complete.
func TestHostileProgramCannotTurnItsLogAgainstRoot(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	must(t, os.Chmod(root, 0o755))
	logDir := filepath.Join(root, "logs")
	must(t, os.Mkdir(logDir, 0o755))
	must(t, os.Chown(logDir, 65534, 65534))
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "cron")
	must(t, os.WriteFile(secret, []byte("root's\n"), 0o644))
	log := filepath.Join(logDir, "out.log")

	script := fmt.Sprintf(`cd %s; mkdir -p out.log.2/full; i=0
while :; do
  i=$((i+1)); echo "line $i $(printf '%%080d' 0)"
  case $((i %% 97)) in
    0) rm -f out.log; ln -s %s out.log ;;
    50) rm -f out.log; mkfifo out.log ;;
  esac
  [ $i -ge 3000 ] && { echo done > ../done-marker 2>/dev/null; exec sleep 1000; }
done`, logDir, secret)
	dir, file := writeConfig(t, fmt.Sprintf(`
[program.hostile]
command = ["sh", "-c", %q]
user = "nobody"
[program.hostile.stdout]
console = false
file = %q
max_size = "4KiB"
max_files = 3
`, script, log))
	// nobody's working directory, and the test's own parent of it.
	must(t, os.Chmod(filepath.Dir(dir), 0o755))
	must(t, os.Chmod(dir, 0o755))
	d := startDaemon(t, dir, file)
	eventually(t, "the program's 3000 lines to be written", 120*time.Second, func() bool {
		// The program may have a FIFO or a symlink at the name for a
		// moment: never block on it or follow it.
		f, err := os.OpenFile(log, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return false
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			return false
		}
		b, _ := io.ReadAll(f)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		return len(lines) > 0 && strings.HasPrefix(lines[len(lines)-1], "line 3000 ")
	})
	if b, _ := os.ReadFile(secret); string(b) != "root's\n" {
		t.Fatalf("the root file now holds %d bytes: the supervisor wrote through the program's symlink", len(b))
	}
	for _, p := range []string{log, log + ".1"} {
		st, err := os.Lstat(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
		} else if !st.Mode().IsRegular() || st.Size() > 4096 {
			t.Errorf("%s: mode %v, %d bytes: want a regular file of at most 4 KiB", p, st.Mode(), st.Size())
		}
	}
	d.signal(15)
	if code := d.wait(60 * time.Second); code != 0 {
		t.Fatalf("supervise exit %d after SIGTERM", code)
	}
}
