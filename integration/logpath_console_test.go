package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A log path that is a symlink root made to /proc/self/fd/1, in a
// directory only root can write (a container's /var/log/app.log ->
// /dev/stdout, made privately here: the machine's own /dev/stdout is never
// used), is written through: the program's line reaches supervise's
// stdout, and the symlink is still there after. A FIFO root made at
// another program's log path is refused with an event and left in place;
// that program's lines go to the console.
func TestLogPathSymlinkToOwnStdout(t *testing.T) {
	needRoot(t)
	logDir := filepath.Join(t.TempDir(), "log")
	must(t, os.Mkdir(logDir, 0o755))
	link := filepath.Join(logDir, "app.log")
	must(t, os.Symlink("/proc/self/fd/1", link))
	fifo := filepath.Join(logDir, "fifo.log")
	must(t, syscall.Mkfifo(fifo, 0o600))
	dir, file := writeConfig(t, `
[program.app]
command = ["sh", "-c", "echo through-the-link-42; exec sleep 1000"]
stdout = { console = false, file = "`+link+`", max_size = "4KiB" }

[program.piped]
command = ["sh", "-c", "echo piped-line-7; exec sleep 1000"]
stdout = { console = false, file = "`+fifo+`" }
`)
	d := startDaemon(t, dir, file)
	eventually(t, "the line through the symlink on supervise's stdout", 60*time.Second, func() bool {
		for _, l := range strings.Split(d.stdout.String(), "\n") {
			if l == "through-the-link-42" {
				return true
			}
		}
		return false
	})
	eventually(t, "the refused FIFO's program on the console", 60*time.Second, func() bool {
		return strings.Contains(d.stdout.String(), "piped-line-7")
	})
	events, _ := d.ctl("events")
	if !strings.Contains(events, "LogFileRefused") || !strings.Contains(events, "a FIFO, not made by supervise") {
		t.Errorf("no LogFileRefused event naming the FIFO:\n%s", events)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(60 * time.Second); code != 0 {
		t.Errorf("supervise exit %d", code)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink is gone: %v %v", st, err)
	} else if target, _ := os.Readlink(link); target != "/proc/self/fd/1" {
		t.Errorf("the symlink now points to %q", target)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is gone: %v %v", st, err)
	}
}
