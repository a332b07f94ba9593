package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// onTerminal runs supervisectl with its stdout on a pseudo-terminal and
// returns what the terminal received.
func (d *daemon) onTerminal(args ...string) string {
	d.t.Helper()
	master, slave := openPty(d.t)
	cmd := d.ctlCmd(args...)
	cmd.Stdout = slave
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Env = append(os.Environ(), "TERM=xterm", "NO_COLOR=")
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	slave.Close() // the child has it; EOF (EIO) comes when it exits
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { _, err := io.Copy(&out, master); done <- err }()
	if err := cmd.Wait(); err != nil {
		d.t.Fatalf("supervisectl %v: %v\n%s", args, err, errb.String())
	}
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, syscall.EIO) {
			d.t.Fatalf("reading the terminal: %v", err)
		}
	case <-time.After(30 * time.Second):
		d.t.Fatal("the terminal never reached its end")
	}
	return out.String()
}

// TestProgramBytesCannotDriveTheOperatorsTerminal: a program prints escape
// sequences (set the title, clear the screen, a colour) and sends them in
// its sd_notify STATUS. On a terminal supervisectl shows them escaped,
// colours aside; --json and a pipe keep the bytes as they were.
func TestProgramBytesCannotDriveTheOperatorsTerminal(t *testing.T) {
	needRoot(t)
	dir, file := writeConfig(t, `
[program.evil]
command = ["sh", "evil.sh"]
notify = "sd_notify"
env = { SEND = '''`+sendNotify+`''' }
`)
	must(t, os.WriteFile(filepath.Join(dir, "evil.sh"), []byte(`
printf '\033]0;pwned\007title\n'
printf '\033[2Jcleared\n'
printf '\033[31mred\033[0m\n'
echo printed-all
# The main process itself speaks: a sender that exits at once may be gone
# before the supervisor can tell it is the program's.
exec /usr/bin/python3 -c "$SEND; import time; time.sleep(100000)" "$NOTIFY_SOCKET" "$(printf 'READY=1\nSTATUS=\033]0;owned\007\033[2Jbusy')"
`), 0o644))
	d := startDaemon(t, dir, file)
	eventually(t, "evil running, its status sent and its lines logged", 60*time.Second, func() bool {
		out, _ := d.ctl("logs", "evil")
		st, _ := d.ctl("status", "--json")
		return strings.Contains(out, "printed-all") && strings.Contains(st, "busy")
	})

	// supervisectl logs on a terminal.
	term := d.onTerminal("logs", "evil")
	for _, raw := range []string{"\x1b]", "\x07", "\x1b[2J"} {
		if strings.Contains(term, raw) {
			t.Errorf("logs on a terminal wrote %q raw:\n%q", raw, term)
		}
	}
	for _, shown := range []string{`\x1b]0;pwned\x07title`, `\x1b[2Jcleared`, "\x1b[31mred\x1b[0m"} {
		if !strings.Contains(term, shown) {
			t.Errorf("logs on a terminal lacks %q:\n%q", shown, term)
		}
	}

	// status on a terminal: the MESSAGE column.
	term = d.onTerminal("status")
	if strings.Contains(term, "\x1b]") || strings.Contains(term, "\x07") || strings.Contains(term, "\x1b[2J") {
		t.Errorf("status on a terminal wrote the program's escapes raw:\n%q", term)
	}
	if !strings.Contains(term, `\x1b]0;owned\x07\x1b[2Jbusy`) {
		t.Errorf("status on a terminal does not show the message escaped:\n%q", term)
	}

	// --json keeps the exact bytes; so does a pipe.
	out, code := d.ctl("logs", "--json", "evil")
	if code != 0 {
		t.Fatalf("logs --json: %d %s", code, out)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l struct{ Text string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Text == "\x1b]0;pwned\x07title" {
			found = true
		}
	}
	if !found {
		t.Errorf("logs --json lost the exact bytes:\n%s", out)
	}
	if out, _ := d.ctl("logs", "evil"); !strings.Contains(out, "\x1b]0;pwned\x07title") {
		t.Errorf("logs to a pipe changed the bytes:\n%q", out)
	}
}
