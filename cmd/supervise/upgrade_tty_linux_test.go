package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/supervise-dev/supervise/supervisor"
)

// A terminal in the state must be a pseudo-terminal's master: a pipe, a
// character device such as /dev/null, or the slave side are refused.
func TestReadStateChecksATerminal(t *testing.T) {
	lf := listenerFile(t)
	open := func(path string, flags int) int {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	master := open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY)
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(master, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave := open("/dev/pts/"+strconv.Itoa(n), unix.O_RDWR|unix.O_NOCTTY)
	devNull := open("/dev/null", unix.O_RDWR)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	state := func(fd int) upgradeState {
		st := upgradeState{Format: handoverFormat, Generation: 1, ControlFD: int(lf.Fd()), HTTPFD: -1}
		st.Supervisor.Instances = []supervisor.InstanceHandover{{Key: "a", Pipes: []supervisor.PipeHandover{{Stream: "stdout", FD: fd, Tty: true}}}}
		return st
	}
	for name, c := range map[string]struct {
		fd   int
		want string
	}{
		"a pipe":    {p[0], "not the right kind"},
		"/dev/null": {devNull, "not a pseudo-terminal master"},
		"the slave": {slave, "not a pseudo-terminal master"},
	} {
		err := readState(stateFile(t, state(c.fd)), &upgradeState{keep: map[int]*os.File{}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s as a terminal: readState = %v, want an error with %q", name, err, c.want)
		}
	}
	st := &upgradeState{keep: map[int]*os.File{}}
	if err := readState(stateFile(t, state(master)), st); err != nil {
		t.Fatalf("a pseudo-terminal's master: %v", err)
	}
	if st.files[master] == nil {
		t.Errorf("files %v, want the master", st.files)
	}
}
