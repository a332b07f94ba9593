package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A descriptor supervise inherits (`supervise run … 7<secret`) must not
// reach its programs: they may run as another user, who could read what
// only root could open. `exec` passes what it is asked to pass.

// secretFile is a root-only file in a root-only directory, opened: only
// an inherited descriptor can give its bytes to another user.
func secretFile(t *testing.T) *os.File {
	t.Helper()
	needRoot(t)
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte("the-root-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// snoop tries every descriptor a program may have been handed and prints
// what it reads; it runs as nobody.
const snoop = `echo "uid $(id -u)"; for fd in 3 4 5 6 7 8 9; do eval "cat <&$fd" 2>/dev/null; done; echo snooped`

// withFD7 puts f at descriptors 3 to 7 of the child.
func withFD7(f *os.File) []*os.File { return []*os.File{f, f, f, f, f} }

func TestInheritedFDsDoNotReachPrograms(t *testing.T) {
	t.Run("exec", func(t *testing.T) {
		secret := secretFile(t)
		cmd := exec.Command(binary, "exec", "--", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", snoop)
		cmd.ExtraFiles = withFD7(secret)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("supervise exec: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "uid 65534") || !strings.Contains(string(out), "snooped") {
			t.Fatalf("the program did not run as nobody:\n%s", out)
		}
		if strings.Contains(string(out), "the-root-secret") {
			t.Errorf("a nobody program under `supervise exec` read root's inherited descriptor:\n%s", out)
		}
	})
	t.Run("run", func(t *testing.T) {
		secret := secretFile(t)
		dir, file := writeConfig(t, `
[program.snoop]
command = ['sh', '-c', '`+snoop+`']
user = "nobody"
dir = "/"
restart = "never"
`)
		d := startDaemonFiles(t, dir, file, withFD7(secret))
		eventually(t, "the program's output", 60*time.Second, func() bool {
			if strings.Contains(d.stdout.String(), "snooped") {
				return true
			}
			select {
			case <-d.done:
				t.Fatalf("supervise exited:\n%s", d.stderr)
			default:
			}
			return false
		})
		out := d.stdout.String()
		if !strings.Contains(out, "uid 65534") {
			t.Fatalf("the program did not run as nobody:\n%s", out)
		}
		if strings.Contains(out, "the-root-secret") {
			t.Errorf("a nobody program under `supervise run` read root's inherited descriptor:\n%s", out)
		}
	})
}

// startDaemonFiles is startDaemon with files at descriptors 3, 4, … of
// supervise.
func startDaemonFiles(t *testing.T, dir, file string, files []*os.File, extra ...string) *daemon {
	t.Helper()
	d := newDaemon(t, dir)
	cmd := exec.Command(binary, append([]string{"run", "-c", file, "--socket", d.socket}, extra...)...)
	cmd.Dir = dir
	cmd.ExtraFiles = files
	d.launch(cmd)
	return d
}

// TestExecPassesRequestedFDs: --preserve-fds N passes 3 … 2+N and nothing
// above; socket activation (LISTEN_FDS with LISTEN_PID naming supervise)
// passes its descriptors and names the command in LISTEN_PID. Both
// directly and through a sandbox (--pids-max), whose runtime passes only
// what it is handed.
func TestExecPassesRequestedFDs(t *testing.T) {
	needRoot(t)
	for _, sandbox := range []bool{false, true} {
		name := "direct"
		var flags []string
		if sandbox {
			name, flags = "sandbox", []string{"--pids-max", "64"}
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for fd := 3; fd <= 7; fd++ {
				p := filepath.Join(dir, fmt.Sprintf("fd%d", fd))
				if err := os.WriteFile(p, []byte(fmt.Sprintf("content-of-%d\n", fd)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// Opened afresh for each run: a read moves the shared offset.
			open := func() []*os.File {
				files := make([]*os.File, 5)
				for i := range files {
					f, err := os.Open(filepath.Join(dir, fmt.Sprintf("fd%d", 3+i)))
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { f.Close() })
					files[i] = f
				}
				return files
			}
			read := `for fd in 3 4 5 6 7; do eval "cat <&$fd" 2>/dev/null; done; echo "pid $$ listen_pid ${LISTEN_PID:-none} listen_fds ${LISTEN_FDS:-none}"`

			// --preserve-fds 2: fds 3 and 4, not 5 to 7.
			cmd := exec.Command(binary, append(append([]string{"exec"}, flags...), "--preserve-fds", "2", "--", "sh", "-c", read)...)
			cmd.ExtraFiles = open()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("supervise exec --preserve-fds 2: %v\n%s", err, out)
			}
			for fd := 3; fd <= 7; fd++ {
				got := strings.Contains(string(out), fmt.Sprintf("content-of-%d", fd))
				if want := fd <= 4; got != want {
					t.Errorf("--preserve-fds 2: descriptor %d passed: %v, want %v\n%s", fd, got, want, out)
				}
			}

			// Socket activation: LISTEN_FDS=2 for supervise (LISTEN_PID is
			// its pid, set by the shell that execs it), plus
			// --preserve-fds 1: fds 3 to 5, LISTEN_PID the command's pid.
			script := `LISTEN_PID=$$ LISTEN_FDS=2 exec "$@"`
			argv := append(append([]string{"sh", "-c", script, "sh", binary, "exec"}, flags...), "--preserve-fds", "1", "--", "sh", "-c", read)
			cmd = exec.Command(argv[0], argv[1:]...)
			cmd.ExtraFiles = open()
			out, err = cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("supervise exec with LISTEN_FDS: %v\n%s", err, out)
			}
			for fd := 3; fd <= 7; fd++ {
				got := strings.Contains(string(out), fmt.Sprintf("content-of-%d", fd))
				if want := fd <= 5; got != want {
					t.Errorf("LISTEN_FDS=2 --preserve-fds 1: descriptor %d passed: %v, want %v\n%s", fd, got, want, out)
				}
			}
			var pid, lpid int
			var lfds string
			for l := range strings.SplitSeq(string(out), "\n") {
				if strings.HasPrefix(l, "pid ") {
					var lp string
					fmt.Sscanf(l, "pid %d listen_pid %s listen_fds %s", &pid, &lp, &lfds)
					lpid, _ = strconv.Atoi(lp)
				}
			}
			if pid == 0 || lpid != pid || lfds != "2" {
				t.Errorf("socket activation: the command (pid %d) got LISTEN_PID %d and LISTEN_FDS %q, want its own pid and 2\n%s", pid, lpid, lfds, out)
			}
		})
	}
}
