package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// eventFeed follows `supervisectl events -f --json` of a daemon: a test
// waits for the supervisor's own account of what happened (a start, a
// back-off and the delay it chose) instead of sleeping and guessing.
type eventFeed struct {
	t       *testing.T
	mu      sync.Mutex
	evs     []event       // guarded by mu
	changed chan struct{} // guarded by mu; closed and replaced on each event
	next    int           // the cursor of waitEvent
}

// followEvents starts the follower; it ends with the test.
func (d *daemon) followEvents() *eventFeed {
	d.t.Helper()
	f := &eventFeed{t: d.t, changed: make(chan struct{})}
	eventually(d.t, "the control socket", 60*time.Second, func() bool {
		_, code := d.ctl("status")
		return code == 0
	})
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, ctlBinary, "--socket", d.socket, "events", "-f", "--json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		d.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var ev event
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			f.mu.Lock()
			f.evs = append(f.evs, ev)
			close(f.changed)
			f.changed = make(chan struct{})
			f.mu.Unlock()
		}
	}()
	d.t.Cleanup(func() { cancel(); <-done; _ = cmd.Wait() })
	return f
}

// waitEvent waits for the next event (after the one it returned last)
// that match accepts, and returns it.
func (f *eventFeed) waitEvent(what string, timeout time.Duration, match func(event) bool) event {
	f.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		for ; f.next < len(f.evs); f.next++ {
			if ev := f.evs[f.next]; match(ev) {
				f.next++
				f.mu.Unlock()
				return ev
			}
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			f.t.Fatalf("timed out after %v waiting for the event %s; events:\n%s", timeout, what, f.dump())
		}
	}
}

// transitions lists the events of program so far, as "From→To message".
func (f *eventFeed) transitions(program string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, ev := range f.evs {
		if ev.Program == program {
			out = append(out, ev.From+"→"+ev.To+" "+ev.Message)
		}
	}
	return out
}

func (f *eventFeed) dump() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := ""
	for _, ev := range f.evs {
		s += ev.Time.Format("15:04:05.000") + " " + ev.Program + " " + ev.From + "→" + ev.To + " " + ev.Message + "\n"
	}
	return s
}
