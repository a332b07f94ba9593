package main

import (
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/supervise-dev/supervise/supervisor"
)

func TestParseProbe(t *testing.T) {
	r, err := parseProbe([]byte("supervise-upgrade-probe version=v2 formats=1,2\n"))
	if err != nil || r.version != "v2" || strings.Join(r.formats, ",") != "1,2" {
		t.Fatalf("parseProbe = %+v, %v", r, err)
	}
	for _, bad := range []string{"", "hello", "supervise-upgrade-probe version=v2", "supervise-upgrade-probe version= formats=1", "other version=v2 formats=1"} {
		if _, err := parseProbe([]byte(bad)); err == nil {
			t.Errorf("parseProbe(%q) took it", bad)
		}
	}
}

// stateFile writes st (any JSON) to a file the way the memfd carries it.
func stateFile(t *testing.T, v any) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "state")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewEncoder(f).Encode(v); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// listenerFile is a listening unix socket's descriptor, as the control
// socket crosses an upgrade.
func listenerFile(t *testing.T) *os.File {
	t.Helper()
	ln, err := net.Listen("unix", t.TempDir()+"/s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	lf, err := ln.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lf.Close() })
	return lf
}

// The state is another binary's output: readState refuses what is not a
// state of this format, descriptors out of range, named twice, or of the
// wrong kind, before anything uses them.
func TestReadStateRefusesBadInput(t *testing.T) {
	sock := int(listenerFile(t).Fd())
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	pipe := int(r.Fd())
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	defer w2.Close()
	pipe2 := int(r2.Fd())
	dc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: t.TempDir() + "/notify", Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	df, err := dc.File()
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	dgram := int(df.Fd())
	good := func() upgradeState {
		return upgradeState{Format: handoverFormat, Generation: 1, ControlFD: sock, HTTPFD: -1}
	}
	withPipe := func(fd int) upgradeState {
		st := good()
		st.Supervisor.Instances = []supervisor.InstanceHandover{{Key: "a", Pipes: []supervisor.PipeHandover{{Stream: "stdout", FD: fd}}}}
		return st
	}
	withNotify := func(n supervisor.NotifyHandover) upgradeState {
		st := withPipe(pipe)
		st.Supervisor.Instances[0].Notify = &n
		return st
	}
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"pipe as notify socket", withNotify(supervisor.NotifyHandover{SocketFD: pipe2}), "not the right kind"},
		{"socket as notify pipe", withNotify(supervisor.NotifyHandover{PipeFD: dgram}), "not the right kind"},
		{"output pipe as notify pipe", withNotify(supervisor.NotifyHandover{PipeFD: pipe}), "named twice"},
		{"control as notify socket", withNotify(supervisor.NotifyHandover{SocketFD: sock}), "named twice"},
		{"socket and pipe the same", withNotify(supervisor.NotifyHandover{SocketFD: dgram, PipeFD: dgram}), "named twice"},
		{"stderr as notify socket", withNotify(supervisor.NotifyHandover{SocketFD: 2}), "out of range"},
		{"stderr as notify pipe", withNotify(supervisor.NotifyHandover{PipeFD: 2}), "out of range"},
		{"closed notify pipe", withNotify(supervisor.NotifyHandover{PipeFD: 999998}), "descriptor 999998"},
		{"not JSON", "][", "decoding"},
		{"another format", upgradeState{Format: "99", Generation: 1}, "state format"},
		{"a later format", upgradeState{Format: "3", Generation: 1}, "state format"},
		{"no generation", upgradeState{Format: handoverFormat}, "history"},
		{"stdio as control", func() upgradeState { s := good(); s.ControlFD = 1; return s }(), "out of range"},
		{"closed descriptor", func() upgradeState { s := good(); s.ControlFD = 999999; return s }(), "descriptor 999999"},
		{"pipe as control", func() upgradeState { s := good(); s.ControlFD = pipe; return s }(), "not the right kind"},
		{"socket as pipe", withPipe(sock), "out of range or named twice"},
		{"control as HTTP", func() upgradeState { s := good(); s.HTTPFD = sock; return s }(), "named twice"},
	}
	for _, c := range cases {
		st := &upgradeState{keep: map[int]*os.File{}}
		err := readState(stateFile(t, c.v), st)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: readState = %v, want an error with %q", c.name, err, c.want)
		}
	}
	st := &upgradeState{keep: map[int]*os.File{}}
	if err := readState(stateFile(t, withPipe(pipe)), st); err != nil {
		t.Fatalf("a good state: %v", err)
	}
	if st.files[pipe] == nil || st.files[sock] == nil {
		t.Errorf("files %v, want the pipe and the socket", st.files)
	}
	// A format-1 state, as the binaries before notify, terminals and the
	// carried config wrote it, is taken over: those parts are absent.
	old := withPipe(pipe)
	old.Format = "1"
	st = &upgradeState{keep: map[int]*os.File{}}
	if err := readState(stateFile(t, old), st); err != nil || st.Supervisor.Config != nil {
		t.Fatalf("a format-1 state: %v (config %v)", err, st.Supervisor.Config)
	}
	if f := readFormats(); f != "1,2" {
		t.Errorf("the probe says formats=%s, want 1,2", f)
	}
	st = &upgradeState{keep: map[int]*os.File{}}
	if err := readState(stateFile(t, withNotify(supervisor.NotifyHandover{SocketFD: dgram})), st); err != nil {
		t.Fatalf("a good state with a notify socket: %v", err)
	}
	if st.files[dgram] == nil {
		t.Errorf("files %v, want the notify socket", st.files)
	}
	st = &upgradeState{keep: map[int]*os.File{}}
	if err := readState(stateFile(t, withNotify(supervisor.NotifyHandover{PipeFD: pipe2})), st); err != nil {
		t.Fatalf("a good state with a notify pipe: %v", err)
	}
	if st.files[pipe2] == nil {
		t.Errorf("files %v, want the notify pipe", st.files)
	}
}

// version answers while an upgrade is under way (it holds mu from the
// probe to the exec): a version call waiting for it until the exec would
// lose its connection there.
func TestVersionAnswersDuringAnUpgrade(t *testing.T) {
	u := &upgrader{}
	u.mu.Lock() // an upgrade under way
	defer u.mu.Unlock()
	got := make(chan error, 1)
	go func() {
		_, err := u.Version(t.Context())
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("version during an upgrade: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("version waited for the upgrade")
	}
}
