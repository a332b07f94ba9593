package supervisor

import (
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/internal/sockets"
	"github.com/supervise-dev/supervise/proc"
)

func listenConfig(t *testing.T, urls ...[]string) *config.Config {
	t.Helper()
	cfg := &config.Config{File: "s.toml"}
	for i, list := range urls {
		p := &config.Program{Name: string(rune('a' + i)), Line: 10 * (i + 1)}
		for _, u := range list {
			s, err := sockets.Parse(u)
			if err != nil {
				t.Fatal(err)
			}
			p.Listen = append(p.Listen, s)
		}
		cfg.Programs = append(cfg.Programs, p)
	}
	return cfg
}

func loopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// A reload keeps the sockets it still names (the same socket, not a new
// bind), binds the new ones, closes the ones gone, and a reload whose bind
// fails changes nothing.
func TestListenSetReload(t *testing.T) {
	l := &listenSet{log: slog.New(slog.DiscardHandler)}
	defer l.closeAll()
	a, b, c := loopbackPort(t), loopbackPort(t), loopbackPort(t)
	apply := func(cfg *config.Config) error {
		ch, err := l.prepare(cfg)
		if err == nil {
			l.commit(ch)
		}
		return err
	}
	if err := apply(listenConfig(t, []string{"tcp://" + a, "tcp://" + b})); err != nil {
		t.Fatal(err)
	}
	kept := l.held["tcp:"+a]
	// b moves to another program, a stays, c is new.
	if err := apply(listenConfig(t, []string{"tcp://" + a}, []string{"tcp://" + b, "tcp://" + c})); err != nil {
		t.Fatal(err)
	}
	if l.held["tcp:"+a] != kept || len(l.held) != 3 {
		t.Errorf("after the reload: %d held, a kept: %v", len(l.held), l.held["tcp:"+a] == kept)
	}
	// An address in use: refused, with file:line, and nothing changes.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	err = apply(listenConfig(t, []string{"tcp://" + a}, []string{"tcp://" + busy.Addr().String()}))
	if err == nil || !strings.HasPrefix(err.Error(), "s.toml:20: program.b.listen[0]: binding") || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("a reload to a busy address: %v", err)
	}
	if len(l.held) != 3 {
		t.Errorf("the refused reload changed the held sockets: %d", len(l.held))
	}
	// a is dropped: closed, so the address is free again.
	if err := apply(listenConfig(t, []string{"tcp://" + b})); err != nil {
		t.Fatal(err)
	}
	if ln, err := net.Listen("tcp", a); err != nil {
		t.Errorf("a dropped socket still holds %s: %v", a, err)
	} else {
		ln.Close()
	}
}

// A process gets its sockets at 3, 4, … after which its other extra
// descriptors stay where they were asked, with sd_listen_fds's variables.
func TestAddSockets(t *testing.T) {
	l := &listenSet{log: slog.New(slog.DiscardHandler)}
	defer l.closeAll()
	cfg := listenConfig(t, []string{"tcp://" + loopbackPort(t) + "?name=http", "tcp://" + loopbackPort(t)})
	ch, err := l.prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l.commit(ch)
	notifyPipe, w, _ := os.Pipe()
	defer notifyPipe.Close()
	defer w.Close()
	pcfg := proc.ProcessConfig{Env: []string{"A=1", "LISTEN_FDS=9", "LISTEN_PID=1"}, ExtraFiles: map[int]*os.File{5: w}}
	closeAll, err := l.addSockets(cfg.Programs[0], &pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	if pcfg.ExtraFiles[3] == nil || pcfg.ExtraFiles[4] == nil || pcfg.ExtraFiles[5] != w || !pcfg.ListenPID {
		t.Errorf("extra files %v, ListenPID %v", pcfg.ExtraFiles, pcfg.ListenPID)
	}
	want := []string{"A=1", "LISTEN_FDS=2", "LISTEN_FDNAMES=http:a"}
	if !slices.Equal(pcfg.Env, want) {
		t.Errorf("env %q, want %q", pcfg.Env, want)
	}
	// A socket no longer held (a reload dropped it) fails the start.
	other := listenConfig(t, []string{"tcp://" + loopbackPort(t)})
	if _, err := l.addSockets(other.Programs[0], &proc.ProcessConfig{}); err == nil {
		t.Error("a start got a socket that is not held")
	}
}
