package sockowner

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// accept returns the server's end of a connection from client.
func accept(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestOwnerOfALoopbackClientIsItsUID(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		addr := map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network]
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Skipf("%s: %v", network, err)
		}
		defer ln.Close()
		cl, err := net.Dial(network, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		srv := accept(t, ln)
		uid, ok := Owner(srv)
		if !ok || uid != uint32(os.Getuid()) {
			t.Errorf("%s: Owner = %d %v, want %d true", network, uid, ok, os.Getuid())
		}
		// The far end of the client's connection is the server's socket.
		if uid, ok := Owner(cl); !ok || uid != uint32(os.Getuid()) {
			t.Errorf("%s: Owner of the client's end = %d %v", network, uid, ok)
		}
	}
}

// A client of another user is told apart from root's, on the same
// loopback address: nc run as uid 65534 connects.
func TestOwnerTellsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as uid 65534")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	// The client is bash's /dev/tcp, run as uid 65534.
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash for a /dev/tcp client")
	}
	cmd := exec.Command(bash, "-c", "exec 3<>/dev/tcp/127.0.0.1/"+strconv.Itoa(port)+"; read -t 60 line <&3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(60 * time.Second))
	srv := accept(t, ln)
	uid, ok := Owner(srv)
	if !ok || uid != 65534 {
		t.Errorf("Owner = %d %v, want 65534", uid, ok)
	}
	srv.Write([]byte("bye\n"))
}

func TestOwnerOfAPipeIsUnknown(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, ok := Owner(a); ok {
		t.Error("a pipe has an owner")
	}
}
