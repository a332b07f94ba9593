package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A reload that changes only where a program's lines go applies to the
// running process, as the reload's rules say: its pipes are carried over
// to the new files, never closed under it (it would die of SIGPIPE at its
// next write), and no line is lost or doubled on the way.
func TestReloadLogFileKeepsTheProcess(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	const src = "[program.p]\ncommand = [\"sh\", \"-c\", \"i=0; while :; do i=$((i+1)); echo \\\"$i-x\\\"; sleep 0.1; done\"]\nstdout = { file = %q }\n"
	_, file := writeConfig(t, fmt.Sprintf(src, a))
	d := startDaemon(t, dir, file)
	pid := d.running("p")["p"]
	eventually(t, "lines in a.log", 30*time.Second, func() bool { return len(readLines(t, a)) >= 5 })
	if err := os.WriteFile(file, []byte(fmt.Sprintf(src, b)), 0o644); err != nil {
		t.Fatal(err)
	}
	d.ctlOK("reload")
	// The old router gave up on its pipes after 5 s: 100 lines at 10 a
	// second are well past that, however slow the machine.
	eventually(t, "100 lines in b.log", 120*time.Second, func() bool { return len(readLines(t, b)) >= 100 })
	st := d.status()["p"]
	if st.Pid != pid || st.Restarts != 0 {
		t.Fatalf("after the reload p is pid %d with %d restarts (last exit %+v), want pid %d still running", st.Pid, st.Restarts, st.LastExit, pid)
	}
	d.shutdown(60 * time.Second)
	lines := append(readLines(t, a), readLines(t, b)...)
	for i, l := range lines {
		if want := fmt.Sprintf("%d-x", i+1); l != want {
			t.Fatalf("line %d of a.log then b.log is %q, want %q (a line lost or doubled)", i+1, l, want)
		}
	}
}
