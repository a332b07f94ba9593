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

// A supervisord command line holding shell syntax, in the file and in a
// %(ENV_X)s value, is imported, run by the real binary, and reaches the
// program as the argv words supervisord would have given it: no shell
// ever runs the line, so no marker file appears.
func TestImportSupervisordNoShell(t *testing.T) {
	dir := t.TempDir()
	m := func(n string) string { return filepath.Join(dir, n) }
	conf := filepath.Join(dir, "supervisord.conf")
	src := "[program:argv]\n" +
		`command=/bin/sh -c 'for a; do printf "[%%s]\n" "$a"; done > ` + m("out.tmp") + " && mv " + m("out.tmp") + " " + m("out") + `' argv0 ` +
		`%(ENV_IMPORT_PAYLOAD)s $(touch ` + m("m1") + ") `touch " + m("m2") + "`;touch${IFS}" + m("m3") + ` a|b "q;$(touch ` + m("m6") + `)"` + "\n" +
		"autorestart=false\n"
	if err := os.WriteFile(conf, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "supervise.toml")
	imp := exec.Command(binary, "import", "supervisord", "-o", out, conf)
	imp.Env = append(os.Environ(), "IMPORT_PAYLOAD=$(touch "+m("m4")+") x;touch${IFS}"+m("m5"))
	msg, err := imp.CombinedOutput()
	if err != nil {
		t.Fatalf("import: %v\n%s", err, msg)
	}
	if !strings.Contains(string(msg), "IMPORT_PAYLOAD") {
		t.Errorf("no warning that %%(ENV_IMPORT_PAYLOAD)s was fixed at import:\n%s", msg)
	}
	d := startDaemon(t, dir, out)
	// supervise exits once its only program has completed
	if code := d.wait(30 * time.Second); code != 0 {
		t.Errorf("supervise exited %d:\n%s", code, tail(d.stderr.String(), 20))
	}
	for _, n := range []string{"m1", "m2", "m3", "m4", "m5", "m6"} {
		if _, err := os.Stat(m(n)); err == nil {
			t.Errorf("%s exists: a shell ran part of the command line", m(n))
		}
	}
	want := []string{"$(touch", m("m4") + ")", "x;touch${IFS}" + m("m5"), "$(touch", m("m1") + ")", "`touch", m("m2") + "`;touch${IFS}" + m("m3"), "a|b", "q;$(touch " + m("m6") + ")"}
	got := readLines(t, m("out"))
	for i := range got {
		got[i] = strings.TrimSuffix(strings.TrimPrefix(got[i], "["), "]")
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("argv %q\nwant %q\n%s", got, want, tail(d.stderr.String(), 20))
	}
}

// `import supervisord` reads only a regular file of at most 1 MiB: a FIFO
// nobody writes is refused at once (it used to block for ever), and so is
// a larger file.
func TestImportSupervisordRefusesFIFOAndLarge(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.conf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.conf")
	if err := os.WriteFile(big, []byte("[program:a]\ncommand=/bin/true\n"+strings.Repeat("; padding\n", 200000)), 0o644); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{fifo: "not a regular file but a FIFO", big: "larger than 1048576 bytes"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, binary, "import", "supervisord", file).CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		switch {
		case timedOut:
			t.Errorf("import %s: no answer in 30s", file)
		case err == nil || !strings.Contains(string(out), want):
			t.Errorf("import %s: %v, want a refusal saying %q:\n%s", file, err, want, tail(string(out), 5))
		}
	}
}
