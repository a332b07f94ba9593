package supervisor

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/config"
)

func (h *harness) lastConfigEnv(name, key string) string {
	h.t.Helper()
	h.rt.mu.Lock()
	defer h.rt.mu.Unlock()
	for _, kv := range h.rt.configs[name].Env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// sd_notify: READY=1 and STATUS= from the program (the test process stands
// in for it) make it ready and show its status; without WATCHDOG=1 within
// its watchdog time the run ends as WatchdogTimeout.
func TestSdNotifyReadyStatusAndWatchdog(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the private notify directory is made under /run/supervise as root")
	}
	h := newHarnessSetup(t, func(rt *fakeRuntime) { rt.selfPid["svc"] = true },
		program("svc", func(p *config.Program) {
			p.Notify = config.NotifySdNotify
			p.Watchdog = 5 * time.Second
			p.Backoff.Initial = 0
		}),
		program("app", func(p *config.Program) { p.DependsOn = []string{"svc"} }))
	h.waitState("svc", Running)
	h.waitState("app", Waiting)
	sock := h.lastConfigEnv("svc", "NOTIFY_SOCKET")
	if sock == "" {
		t.Fatal("svc got no NOTIFY_SOCKET")
	}
	c, err := net.Dial("unixgram", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("READY=1\nSTATUS=serving 42 clients")); err != nil {
		t.Fatal(err)
	}
	h.waitState("app", Running)
	st, err := h.sup.Status(bg(t), []string{"svc"})
	if err != nil || len(st) != 1 || st[0].Message != "serving 42 clients" || st[0].Ready == nil || !*st[0].Ready {
		t.Fatalf("svc status %+v %v", st, err)
	}

	old := h.procID("svc")
	h.stepWhenArmed(5 * time.Second) // no WATCHDOG=1 came
	h.waitFor("svc restarted for its watchdog", func() bool {
		in := h.sup.instances["svc"]
		return in.procID != old && in.lastExit != nil && in.lastExit.Reason == ReasonWatchdogTimeout
	})
}

// notify = "fd": a newline on the descriptor makes the program ready.
func TestFdNotifyReady(t *testing.T) {
	h := newHarness(t,
		program("fdp", func(p *config.Program) { p.Notify = config.NotifyFD; p.NotifyFD = 3 }),
		program("app", func(p *config.Program) { p.DependsOn = []string{"fdp"} }))
	h.waitState("fdp", Running)
	h.waitState("app", Waiting)
	h.rt.mu.Lock()
	w := h.rt.configs["fdp"].ExtraFiles[3]
	h.rt.mu.Unlock()
	if w == nil {
		t.Fatal("fdp got no descriptor 3")
	}
	// The supervisor closed its copy once the process started; this one
	// is the child's, which the fake runtime keeps.
	if _, err := w.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	h.waitState("app", Running)
}
