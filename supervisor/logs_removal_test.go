package supervisor

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A key removed (scale down) and added back (scale up) before its old
// router has finished closing in the background gets a router of its own:
// the closing of the old one must not take the new instance's output.
func TestLogsOfAKeyAddedBackWhileItsOldRouterCloses(t *testing.T) {
	l := newLogSet(io.Discard, false, false, false, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	p := program("web")
	old := l.forKey(p, "web:1")
	closeOld := l.remove("web:1", old) // the reconcile forgets it now, closes it later
	again := l.forKey(p, "web:1")
	if again == old {
		t.Fatal("the key added back got the router that is being closed")
	}
	closeOld()

	stdout, _, err := again.pipes()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdout, "after the scale up\n")
	stdout.Close()
	deadline := time.Now().Add(30 * time.Second) // bounds a hang only
	for {
		var got []string
		for _, ln := range again.ring.Last(10) {
			got = append(got, ln.Text)
		}
		if strings.Contains(strings.Join(got, "\n"), "after the scale up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new instance's line never reached its log: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	again.close()
}
