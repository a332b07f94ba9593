package notify

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary plays the programs: NOTIFY_TEST_HELPER names the role.
const helperEnv = "NOTIFY_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "sd_notify": // send os.Args[1] to $NOTIFY_SOCKET, as a program would
		if err := NotifySystemd(os.Args[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "fd": // write os.Args[1] to fd 3 (s6 notification-fd), then wait for stdin to close
		f := os.NewFile(3, "notify")
		if _, err := io.WriteString(f, os.Args[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		f.Close()
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	default:
		os.Exit(2)
	}
}

const deadline = 30 * time.Second // generous: the machine may be loaded

func helper(t *testing.T, role string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	// A race-enabled helper would sleep 1s at exit (atexit_sleep_ms).
	cmd.Env = append(os.Environ(), helperEnv+"="+role, "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	return cmd
}

func recvMsg(t *testing.T, s *Socket) Message {
	t.Helper()
	select {
	case m, ok := <-s.Messages():
		if !ok {
			t.Fatal("Messages closed")
		}
		return m
	case <-time.After(deadline):
		t.Fatalf("no message within %v", deadline)
		panic("unreachable")
	}
}

func listen(t *testing.T) *Socket {
	t.Helper()
	s, err := ListenSocket(filepath.Join(t.TempDir(), "notify.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestParseMessage(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Message
	}{
		{"READY=1", Message{Ready: true}},
		{"READY=1\nSTATUS=serving 3 clients\n", Message{Ready: true, Status: "serving 3 clients"}},
		{"WATCHDOG=1", Message{Watchdog: true}},
		{"WATCHDOG=trigger", Message{WatchdogTrigger: true}},
		{"WATCHDOG_USEC=2500000", Message{WatchdogTimeout: 2500 * time.Millisecond}},
		{"WATCHDOG_USEC=-1\nMAINPID=abc\nERRNO=x", Message{}},
		{"STOPPING=1\nMAINPID=4242\nERRNO=2", Message{Stopping: true, MainPID: 4242, Errno: 2}},
		{"RELOADING=1\nREADY=0", Message{Reloading: true}},
		{"garbage\n=nokey\nSTATUS=a=b", Message{Status: "a=b"}},
		{"", Message{}},
	} {
		got := ParseMessage([]byte(tc.in))
		got.Fields = nil
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseMessage(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	if f := ParseMessage([]byte("STATUS=\nX_CUSTOM=1")).Fields; !reflect.DeepEqual(f, map[string]string{"STATUS": "", "X_CUSTOM": "1"}) {
		t.Errorf("Fields = %v", f)
	}
}

func TestSocketFromTest(t *testing.T) {
	s := listen(t)
	fi, err := os.Stat(s.Path())
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket file: %v, %v; want a socket, mode 0600", fi.Mode(), err)
	}
	if err := Send(s.Path(), "READY=1\nSTATUS=up and running"); err != nil {
		t.Fatal(err)
	}
	m := recvMsg(t, s)
	if !m.Ready || m.Status != "up and running" {
		t.Fatalf("message = %+v", m)
	}
	if m.Pid != os.Getpid() || m.Uid != os.Getuid() || m.Gid != os.Getgid() {
		t.Fatalf("credentials pid %d uid %d gid %d, want ours %d %d %d", m.Pid, m.Uid, m.Gid, os.Getpid(), os.Getuid(), os.Getgid())
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, ok := <-s.Messages(); ok {
		t.Fatal("Messages not closed by Close")
	}
	if _, err := os.Lstat(s.Path()); !os.IsNotExist(err) {
		t.Fatalf("socket file left after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestSocketFromChild: a separate process reports readiness through
// NOTIFY_SOCKET, and the message names its pid.
func TestSocketFromChild(t *testing.T) {
	s := listen(t)
	cmd := helper(t, "sd_notify", "READY=1\nSTATUS=child ready")
	cmd.Env = append(cmd.Env, Env(s.Path(), 0)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	m := recvMsg(t, s)
	if !m.Ready || m.Status != "child ready" || m.Pid != pid {
		t.Fatalf("message = %+v, want ready from pid %d", m, pid)
	}
}

// TestSocketSystemdNotify: systemd's own client, whose --ready waits on a
// barrier that only a receiver closing the passed descriptor releases.
func TestSocketSystemdNotify(t *testing.T) {
	bin, err := exec.LookPath("systemd-notify")
	if err != nil {
		t.Skip("systemd-notify is not installed")
	}
	s := listen(t)
	cmd := exec.Command(bin, "--ready", "--status=hello from systemd-notify")
	cmd.Env = append(os.Environ(), Env(s.Path(), 0)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-notify: %v: %s", err, out)
	}
	m := recvMsg(t, s)
	if !m.Ready || m.Status != "hello from systemd-notify" {
		t.Fatalf("message = %+v", m)
	}
	select {
	case m := <-s.Messages():
		t.Fatalf("unexpected second message %+v (the barrier is not delivered)", m)
	default:
	}
}

func TestSocketAbstract(t *testing.T) {
	name := fmt.Sprintf("@supervise-notify-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	s, err := ListenSocket(name)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Setenv("NOTIFY_SOCKET", name)
	if err := NotifySystemd("READY=1"); err != nil {
		t.Fatal(err)
	}
	if m := recvMsg(t, s); !m.Ready {
		t.Fatalf("message = %+v", m)
	}
}

func TestNotifySystemdNoSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if err := NotifySystemd("READY=1"); err != nil {
		t.Fatalf("without NOTIFY_SOCKET: %v, want nil", err)
	}
	t.Setenv("NOTIFY_SOCKET", "vsock:2:1234")
	if err := NotifySystemd("READY=1"); err == nil {
		t.Fatal("vsock address: no error")
	}
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "absent.sock"))
	if err := NotifySystemd("READY=1"); err == nil {
		t.Fatal("absent socket: no error")
	}
}

// TestSocketClosesPassedFDs: descriptors that come with a message are
// closed, so the sender sees its pipe hang up (sd_notify_barrier).
func TestSocketClosesPassedFDs(t *testing.T) {
	s := listen(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Sendmsg(fd, []byte("FDSTORE=1"), unix.UnixRights(int(w.Fd())), &unix.SockaddrUnix{Name: s.Path()}, 0); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if m := recvMsg(t, s); m.Fields["FDSTORE"] != "1" {
		t.Fatalf("message = %+v", m)
	}
	r.SetReadDeadline(time.Now().Add(deadline))
	if n, err := r.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read from the pipe: %d, %v; want EOF (the receiver closed its copy)", n, err)
	}
}

func TestSocketDropsOversized(t *testing.T) {
	s := listen(t)
	if err := Send(s.Path(), "STATUS="+strings.Repeat("x", maxDatagram)); err != nil {
		t.Fatal(err)
	}
	if err := Send(s.Path(), "READY=1"); err != nil {
		t.Fatal(err)
	}
	if m := recvMsg(t, s); !m.Ready || m.Status != "" {
		t.Fatalf("first message delivered = %+v, want READY=1 (the oversized one dropped)", m)
	}
}

// TestSocketCloseWithUnreadMessages: a consumer that never reads does not
// keep Close from returning.
func TestSocketCloseWithUnreadMessages(t *testing.T) {
	s := listen(t)
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: s.Path(), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetWriteDeadline(time.Now().Add(deadline))
	for range cap(s.messages) + 8 {
		if _, err := conn.Write([]byte("WATCHDOG=1")); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(deadline):
		t.Fatal("Close blocked")
	}
}

func TestListenSocketReplacesStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stale.sock")
	old, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	old.Close() // a datagram socket leaves its file behind, as after a crash
	s, err := ListenSocket(path)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	defer s.Close()

	regular := filepath.Join(t.TempDir(), "file")
	os.WriteFile(regular, []byte("keep"), 0o644)
	if _, err := ListenSocket(regular); err == nil {
		t.Fatal("ListenSocket over a regular file: no error")
	}
	if data, _ := os.ReadFile(regular); string(data) != "keep" {
		t.Fatal("ListenSocket clobbered a regular file")
	}
}

func TestEnv(t *testing.T) {
	if got := Env("/run/n.sock", 0); !reflect.DeepEqual(got, []string{"NOTIFY_SOCKET=/run/n.sock"}) {
		t.Errorf("Env without watchdog = %q", got)
	}
	if got := Env("@n", 30*time.Second); !reflect.DeepEqual(got, []string{"NOTIFY_SOCKET=@n", "WATCHDOG_USEC=30000000"}) {
		t.Errorf("Env with watchdog = %q", got)
	}
}
