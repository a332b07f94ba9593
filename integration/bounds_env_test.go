package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// envBomb is an env_file whose every line doubles the one before: 40 lines
// (about 700 bytes) would expand to 8 TiB. It drove `supervise check` to
// 19.6 GB, and a running supervise reloading it died out of memory.
func envBomb() string {
	var b strings.Builder
	b.WriteString("A0=xxxxxxxxxxxxxxxx\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "A%d=${A%d}${A%d}\n", i, i-1, i-1)
	}
	return b.String()
}

// peakRSS is the peak resident size of pid in KiB, from /proc.
func peakRSS(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmHWM for %d", pid)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// The bomb is refused at check and at start with the env file's
// file:line and key, at a cost of a few MiB.
func TestEnvFileBombIsRefusedByCheckAndRun(t *testing.T) {
	dir, file := writeConfig(t, "[program.a]\ncommand = [\"sleep\", \"1000\"]\nenv_file = \"bomb.env\"\n")
	bomb := filepath.Join(dir, "bomb.env")
	must(t, os.WriteFile(bomb, []byte(envBomb()), 0o644))
	want := bomb + ":15: A14: expands to longer than 131072 bytes"
	out, code := runCheck(t, file)
	if code == 0 || !strings.Contains(out, file+":3: program.a.env_file: "+want) {
		t.Fatalf("check: exit %d\n%s", code, tail(out, 5))
	}
	d := startDaemon(t, dir, file)
	if code := d.wait(60e9); code == 0 {
		t.Fatal("run: exit 0 on a refused config")
	}
	if s := d.stderr.String(); !strings.Contains(s, want) {
		t.Fatalf("run stderr:\n%s", tail(s, 5))
	}
}

// A running supervise whose env_file is rewritten with the bomb refuses the
// reload, says where, keeps the program with its old environment and
// stays small.
func TestEnvFileBombReloadKeepsRunning(t *testing.T) {
	dir, file := writeConfig(t, "[supervisor]\nwatch_config = false\n[program.a]\ncommand = [\"sleep\", \"1000\"]\nenv_file = \"app.env\"\n")
	envFile := filepath.Join(dir, "app.env")
	must(t, os.WriteFile(envFile, []byte("GREETING=hello\n"), 0o644))
	d := startDaemon(t, dir, file)
	pids := d.running("a")
	writeAtomic(t, envFile, envBomb())
	out, code := d.ctl("reload")
	want := envFile + ":15: A14: expands to longer than 131072 bytes"
	if code == 0 || !strings.Contains(out, want) {
		t.Fatalf("reload: exit %d, want the error %q\n%s", code, want, tail(out, 5))
	}
	eventually(t, "the error in the supervisor's log", 30e9, func() bool { return strings.Contains(d.stderr.String(), want) })
	d.samePids("after the refused reload", pids)
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pids["a"]))
	must(t, err)
	if !strings.Contains("\x00"+string(environ), "\x00GREETING=hello\x00") || strings.Contains(string(environ), "A0=") {
		t.Errorf("the program's environment changed: %q", environ)
	}
	if kb := peakRSS(t, d.cmd.Process.Pid); kb > 100<<10 {
		t.Errorf("supervise peaked at %d MiB", kb>>10)
	} else {
		t.Logf("supervise peak RSS: %d KiB", kb)
	}
}

// A key of 10,000 parts (20 KB) took the TOML decoder gigabytes: check
// refuses it at its line, and a reload of it keeps everything running.
func TestLongTOMLKeyIsRefused(t *testing.T) {
	long := "x" + strings.Repeat(".a", 9_999) + " = 1\n"
	dir, file := writeConfig(t, "[supervisor]\nwatch_config = false\n"+reloadBase)
	d := startDaemon(t, dir, file)
	pids := d.running("a", "b", "c")
	writeAtomic(t, file, reloadBase+long)
	want := file + ":8: a key path of more than 8 parts"
	out, code := runCheck(t, file)
	if code == 0 || !strings.Contains(out, want) {
		t.Fatalf("check: exit %d\n%s", code, tail(out, 5))
	}
	if out, code := d.ctl("reload"); code == 0 || !strings.Contains(out, want) {
		t.Fatalf("reload: exit %d\n%s", code, tail(out, 5))
	}
	d.samePids("after the refused reload", pids)
	if kb := peakRSS(t, d.cmd.Process.Pid); kb > 100<<10 {
		t.Errorf("supervise peaked at %d MiB", kb>>10)
	}
}
