package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runBinary runs the supervise binary (or supervisectl, named by argv0)
// and returns its combined output and exit code.
func runBinary(t *testing.T, argv0 string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(filepath.Dir(binary), argv0), args...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// TestFlagsAfterNames: flags are taken wherever they stand on the command
// line, as kubectl takes them: after the program names, after a file, and
// a global flag (--socket) after the verb's arguments.
func TestFlagsAfterNames(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, `
[program.web]
command = ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do echo line$i; done; exec sleep 100000"]
`)
	d := startDaemon(t, dir, file)
	eventually(t, "web running with its ten lines", 60*time.Second, func() bool {
		out, _ := d.ctl("logs", "web")
		return d.status()["web"].State == "Running" && strings.Contains(out, "line10")
	})
	pid := d.status()["web"].Pid

	if out, code := d.ctl("restart", "web", "--no-wait"); code != 0 || !strings.Contains(out, "restarted: web") {
		t.Fatalf("restart web --no-wait: exit %d\n%s", code, out)
	}
	eventually(t, "web restarted", 60*time.Second, func() bool {
		st := d.status()["web"]
		return st.State == "Running" && st.Pid != pid
	})

	// The socket flag of supervisectl itself, after the verb's name and flag.
	out, code := runBinary(t, "supervisectl", "status", "web", "--json", "--socket", d.socket)
	var list []programStatus
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Name != "web" {
		t.Fatalf("status web --json --socket S: exit %d\n%s", code, out)
	}
	// And through `supervise ctl`, the flag after a name.
	out, code = runBinary(t, "supervise", "ctl", "logs", "web", "-n", "5", "--socket", d.socket)
	if code != 0 {
		t.Fatalf("supervise ctl logs web -n 5: exit %d\n%s", code, out)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 5 || !strings.Contains(lines[4], "line10") {
		t.Fatalf("logs web -n 5: want the last 5 lines, got:\n%s", out)
	}
	// A flag whose value looks like a program name is a value.
	d.ctlOK("restart", "web", "--timeout", "1m")
	// An unknown flag after a name is still refused, as a usage error.
	if out, code := d.ctl("restart", "web", "--bogus"); code != 2 || !strings.Contains(out, "flag provided but not defined: -bogus") {
		t.Fatalf("restart web --bogus: want exit 2 naming the flag, got %d\n%s", code, out)
	}
}

// TestImportFlagAfterFile: supervise import supervisord FILE -o OUT writes
// OUT.
func TestImportFlagAfterFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "supervisord.conf")
	if err := os.WriteFile(in, []byte("[program:web]\ncommand=/bin/sleep 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outFile := filepath.Join(dir, "supervise.toml")
	if out, code := runBinary(t, "supervise", "import", "supervisord", in, "-o", outFile); code != 0 {
		t.Fatalf("import supervisord FILE -o OUT: exit %d\n%s", code, out)
	}
	if out, code := runCheck(t, outFile); code != 0 || !strings.Contains(out, "1 programs") {
		t.Fatalf("the imported file does not check: exit %d\n%s", code, out)
	}
}

// TestFlagsAfterCommandStayTheCommands: the words after the command of
// run-once and exec are that command's, flags included, and `--` ends
// supervise's own flags.
func TestFlagsAfterCommandStayTheCommands(t *testing.T) {
	for _, args := range [][]string{
		{"run-once", "sh", "-c", `echo "args:$*"`, "sh", "-p", "7", "--json"},
		{"run-once", "-p", "5001", "--", "sh", "-c", `echo "args:$*"`, "sh", "-p", "7", "--json"},
		{"exec", "--", "sh", "-c", `echo "args:$*"`, "sh", "-p", "7", "--json"},
		{"exec", "--grace", "1s", "sh", "-c", `echo "args:$*"`, "sh", "-p", "7", "--json"},
	} {
		out, code := runBinary(t, "supervise", args...)
		if code != 0 || !strings.Contains(out, "args:-p 7 --json") {
			t.Errorf("supervise %q: exit %d, want the command to get -p 7 --json:\n%s", args, code, out)
		}
	}
}
