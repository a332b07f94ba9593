package supervisor

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
	"github.com/supervise-dev/supervise/config"
)

// A hand-over is another binary's output: New refuses one whose instances
// are in a state an adopted instance cannot be in, run without a pid or a
// sandbox, are not in the config any more, or name a pipe not passed.
func TestAdoptRefusesBadHandover(t *testing.T) {
	newCfg := func() *config.Config {
		return &config.Config{File: "test.toml", Supervisor: config.Supervisor{Workers: 2, ShutdownTimeout: 5 * time.Second}, Programs: []*config.Program{program("web")}}
	}
	running := InstanceHandover{Key: "web", State: Running, ProcID: "p", Pid: 4242, SandboxID: "s"}
	with := func(f func(*InstanceHandover)) *Handover {
		ih := running
		f(&ih)
		return &Handover{Instances: []InstanceHandover{ih}}
	}
	cases := []struct {
		name string
		h    *Handover
		want string
	}{
		{"mid-start", with(func(ih *InstanceHandover) { ih.State = Starting }), "state"},
		{"unknown state", with(func(ih *InstanceHandover) { ih.State = "Dancing" }), "state"},
		{"no pid", with(func(ih *InstanceHandover) { ih.Pid = 0 }), "without a pid"},
		{"no sandbox", with(func(ih *InstanceHandover) { ih.SandboxID = "" }), "without a pid or sandbox"},
		{"bad goal", with(func(ih *InstanceHandover) { ih.Goal = 7 }), "bad goal"},
		{"negative restarts", with(func(ih *InstanceHandover) { ih.Restarts = -1 }), "bad goal"},
		{"gone from the config", with(func(ih *InstanceHandover) { ih.Key = "db" }), "not in the config"},
		{"pipe not passed", with(func(ih *InstanceHandover) { ih.Pipes = []PipeHandover{{Stream: "stdout", FD: 99}} }), "descriptor 99"},
		{"odd stream", with(func(ih *InstanceHandover) { ih.Pipes = []PipeHandover{{Stream: "pre_start", FD: 99}} }), "stream"},
		{"pending too long", with(func(ih *InstanceHandover) {
			ih.Pipes = []PipeHandover{{Stream: "stdout", FD: 99, Pending: make([]byte, maxPending+1)}}
		}), "stream"},
		{"scale out of range", &Handover{Scaled: map[string]int{"web": -3}}, "scale"},
	}
	for _, c := range cases {
		clk := fakeclock.New(t0)
		_, err := New(Options{Config: newCfg(), Runtime: newFakeRuntime(clk), Clock: clk, Logger: slog.New(slog.DiscardHandler), Console: io.Discard,
			Adopt: c.h, AdoptFiles: map[int]*os.File{}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, want an error with %q", c.name, err, c.want)
		}
	}
	// A stopped instance gone from the config is simply not there.
	clk := fakeclock.New(t0)
	sup, err := New(Options{Config: newCfg(), Runtime: newFakeRuntime(clk), Clock: clk, Logger: slog.New(slog.DiscardHandler), Console: io.Discard,
		Adopt: &Handover{Instances: []InstanceHandover{{Key: "db", State: Stopped}, {Key: "web", State: Failed, Restarts: 3, Settled: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.queue.ShutDown() // never Run: its queue's goroutine ends here
	sup.mu.Lock()
	defer sup.mu.Unlock()
	if in := sup.instances["web"]; in.state != Failed || in.restarts != 3 || !in.settled {
		t.Errorf("web adopted as %s, %d restarts, settled %v", in.state, in.restarts, in.settled)
	}
}

// An adopted running instance is indexed by its process id, as a start
// indexes it: else its exit, when it comes, finds no instance, and a stop
// waits for it for ever.
func TestAdoptIndexesTheRunningProcess(t *testing.T) {
	clk := fakeclock.New(t0)
	cfg := &config.Config{File: "test.toml", Supervisor: config.Supervisor{Workers: 2, ShutdownTimeout: 5 * time.Second}, Programs: []*config.Program{program("web")}}
	sup, err := New(Options{Config: cfg, Runtime: newFakeRuntime(clk), Clock: clk, Logger: slog.New(slog.DiscardHandler), Console: io.Discard,
		Adopt: &Handover{Instances: []InstanceHandover{{Key: "web", State: Running, ProcID: "p", Pid: 4242, SandboxID: "s"}}}, AdoptFiles: map[int]*os.File{}})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.queue.ShutDown()
	sup.mu.Lock()
	defer sup.mu.Unlock()
	if in := sup.byProc["p"]; in == nil || in.key != "web" {
		t.Errorf("the adopted process p is indexed to %v, want web", in)
	}
}
