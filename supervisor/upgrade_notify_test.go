package supervisor

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/clock/fakeclock"
	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/notify"
)

// notifyConfig has web (sd_notify with a watchdog) and fdp (notify fd).
func notifyConfig() *config.Config {
	return &config.Config{File: "test.toml", Supervisor: config.Supervisor{Workers: 2, ShutdownTimeout: 5 * time.Second}, Programs: []*config.Program{
		program("web", func(p *config.Program) { p.Notify, p.Watchdog = config.NotifySdNotify, 10*time.Second }),
		program("fdp", func(p *config.Program) { p.Notify, p.NotifyFD = config.NotifyFD, 3 }),
	}}
}

// handedOverSocket is a notify socket as an old binary hands it over: made
// below the notify base, detached, with the descriptor to pass.
func handedOverSocket(t *testing.T) (path string, f *os.File) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the notify base is /run/supervise/notify")
	}
	sock, err := notify.ListenPrivate(notify.DefaultBase(), "web", nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err = sock.Detach(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.Close()
		sock.Close()
	})
	return sock.Path(), f
}

// A hand-over's notification channels are another binary's word: New
// refuses a channel the program's notify does not make, one not passed,
// a socket that is not the program's, an sd_notify program without its
// socket, a watchdog that is missing or out of bounds, an oversized
// STATUS=.
func TestAdoptRefusesBadNotifyHandover(t *testing.T) {
	path, sockFile := handedOverSocket(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	stray, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "notify"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	strayFile, err := stray.File()
	if err != nil {
		t.Fatal(err)
	}
	defer strayFile.Close()
	const sockFD, pipeFD, strayFD = 100, 101, 102
	files := func() map[int]*os.File { return map[int]*os.File{sockFD: sockFile, pipeFD: r, strayFD: strayFile} }
	wd := func(left time.Duration) *notify.WatchdogState {
		return &notify.WatchdogState{Timeout: 10 * time.Second, Armed: true, Left: left}
	}
	goodWeb := func() InstanceHandover {
		return InstanceHandover{Key: "web", State: Running, ProcID: "p", Pid: 4242, SandboxID: "s",
			Notify: &NotifyHandover{SocketFD: sockFD, SocketPath: path, Watchdog: wd(time.Second)}}
	}
	goodFd := func() InstanceHandover {
		return InstanceHandover{Key: "fdp", State: Running, ProcID: "q", Pid: 4243, SandboxID: "t",
			Notify: &NotifyHandover{PipeFD: pipeFD}}
	}
	with := func(ih InstanceHandover, f func(*InstanceHandover)) *Handover {
		f(&ih)
		return &Handover{Instances: []InstanceHandover{ih}}
	}
	cases := []struct {
		name string
		h    *Handover
		want string
	}{
		{"sd_notify without its socket", with(goodWeb(), func(ih *InstanceHandover) { ih.Notify = nil }), "socket was not handed over"},
		{"socket not passed", with(goodWeb(), func(ih *InstanceHandover) { ih.Notify.SocketFD = 99 }), "descriptor 99 was not passed"},
		{"a pipe for sd_notify", with(goodWeb(), func(ih *InstanceHandover) { ih.Notify.PipeFD = pipeFD }), "does not make"},
		{"a socket for fd", with(goodFd(), func(ih *InstanceHandover) { ih.Notify.SocketFD, ih.Notify.SocketPath = sockFD, path }), "does not make"},
		{"pipe not passed", with(goodFd(), func(ih *InstanceHandover) { ih.Notify.PipeFD = 98 }), "descriptor 98 was not passed"},
		{"no watchdog", with(goodWeb(), func(ih *InstanceHandover) { ih.Notify.Watchdog = nil }), "watchdog"},
		{"a watchdog for fd", with(goodFd(), func(ih *InstanceHandover) { ih.Notify.Watchdog = wd(0) }), "watchdog"},
		{"more left than the timeout", with(goodWeb(), func(ih *InstanceHandover) { ih.Notify.Watchdog = wd(time.Hour) }), "watchdog"},
		{"negative left", with(goodWeb(), func(ih *InstanceHandover) { ih.Notify.Watchdog = wd(-time.Second) }), "watchdog"},
		{"oversized STATUS=", with(goodWeb(), func(ih *InstanceHandover) { ih.Notify.Status = strings.Repeat("x", maxStatus+1) }), "STATUS="},
		{"a channel without a process", with(goodFd(), func(ih *InstanceHandover) { ih.State, ih.ProcID, ih.Pid, ih.SandboxID = Exited, "", 0, "" }), "without a running process"},
		{"a socket that is not the program's", with(goodWeb(), func(ih *InstanceHandover) {
			ih.Notify.SocketFD, ih.Notify.SocketPath = strayFD, stray.LocalAddr().String()
		}), "not one of the private sockets"},
		{"the path of another socket", with(goodWeb(), func(ih *InstanceHandover) { ih.Notify.SocketFD = strayFD }), "not the socket bound there"},
	}
	for _, c := range cases {
		clk := fakeclock.New(t0)
		_, err := New(Options{Config: notifyConfig(), Runtime: newFakeRuntime(clk), Clock: clk, Logger: slog.New(slog.DiscardHandler), Console: io.Discard,
			Adopt: c.h, AdoptFiles: files()})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, want an error with %q", c.name, err, c.want)
		}
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("a refused hand-over removed the socket file: %v", err)
	}
}

// An adopted run keeps what it said (READY=1, STATUS=, the fd's newline)
// and its watchdog's deadline: ready at once, and killed when what was
// left of the countdown runs out, not a full interval later.
func TestAdoptKeepsNotifyState(t *testing.T) {
	path, sockFile := handedOverSocket(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const sockFD, pipeFD = 100, 101
	clk := fakeclock.New(t0)
	h := &Handover{Instances: []InstanceHandover{
		{Key: "web", State: Running, ProcID: "p", Pid: 4242, SandboxID: "s", Ready: true, Notify: &NotifyHandover{
			SocketFD: sockFD, SocketPath: path, Ready: true, Status: "serving",
			Watchdog: &notify.WatchdogState{Timeout: 10 * time.Second, Armed: true, Left: 3 * time.Second}}},
		{Key: "fdp", State: Running, ProcID: "q", Pid: 4243, SandboxID: "t", Notify: &NotifyHandover{PipeFD: pipeFD}},
	}}
	files := map[int]*os.File{sockFD: sockFile, pipeFD: r}
	sup, err := New(Options{Config: notifyConfig(), Runtime: newFakeRuntime(clk), Clock: clk, Logger: slog.New(slog.DiscardHandler), Console: io.Discard,
		Adopt: h, AdoptFiles: files})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.queue.ShutDown()
	if files[sockFD] == nil || files[pipeFD] != nil {
		t.Errorf("left in the files: %v; want the socket's (closed once the take-over is done), not the pipe's (taken)", files)
	}
	sup.mu.Lock()
	web, fdp := sup.instances["web"], sup.instances["fdp"]
	if !web.ready || web.health.status != "serving" || web.health.sock == nil || web.health.sock.Path() != path {
		t.Errorf("web adopted: ready %v, status %q, socket %v", web.ready, web.health.status, web.health.sock)
	}
	if fdp.ready || fdp.health.fd == nil {
		t.Errorf("fdp adopted: ready %v, fd %v; want its pipe, not ready", fdp.ready, fdp.health.fd)
	}
	fd := fdp.health.fd
	sup.mu.Unlock()

	// The newline written after the take-over is read by this binary.
	w.Write([]byte("\n"))
	select {
	case <-fd.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("fdp's newline after the take-over not read")
	}

	killed := func() bool {
		sup.mu.Lock()
		defer sup.mu.Unlock()
		return web.health.killReason == ReasonWatchdogTimeout
	}
	if killed() || !clk.HasWaiterAt(t0.Add(3*time.Second)) {
		t.Fatal("web's watchdog is not armed for what was left of it (3s)")
	}
	clk.SetTime(t0.Add(3 * time.Second))
	deadline := time.Now().Add(30 * time.Second)
	for !killed() {
		if time.Now().After(deadline) {
			t.Fatal("web's watchdog did not fire when what was left of it ran out")
		}
		time.Sleep(time.Millisecond)
	}
	sup.mu.Lock()
	wh, fh := web.health, fdp.health
	sup.mu.Unlock()
	wh.stop()
	fh.stop()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the adopted socket's file after its run ended: %v, want removed", err)
	}
}
