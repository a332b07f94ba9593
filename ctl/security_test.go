package ctl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/supervise-dev/supervise/logs"
)

const (
	nobody     = 65534
	socketGid  = 4242 // a group no real user has
	otherGroup = 4343
)

// peerDir is a directory another uid can traverse, holding a copy of the
// test binary it can execute (go test builds under 0700 directories).
func peerDir(t *testing.T) (dir, bin string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ctl-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin = filepath.Join(dir, "ctl.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// runPeer runs the status helper as another user and returns its report.
func runPeer(t *testing.T, bin, socket string, cred *syscall.Credential) helperReply {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = []string{helperEnv + "=status", "CTL_TEST_SOCKET=" + socket}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("peer client as uid %d: %v\n%s", cred.Uid, err, stderr.Bytes())
	}
	var r helperReply
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("peer client output %q: %v", out, err)
	}
	return r
}

// syncBuffer collects a logger's output from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestPeerCredentials(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the client runs as uid 65534 through SysProcAttr.Credential")
	}
	dir, bin := peerDir(t)
	for _, tc := range []struct {
		name  string
		mode  os.FileMode
		group string
		cred  syscall.Credential
		// want: admitted, or refused with a message containing refusal
		admitted bool
		refusal  string
		says     string // and this, about who may connect
		logged   bool   // the server logged the refusal (it saw the peer)
	}{
		{name: "socket 0600 keeps other uids out", cred: syscall.Credential{Uid: nobody, Gid: nobody},
			refusal: "uid 65534 cannot connect to " + dir, says: "(the socket is for root and uid 0 only; [supervisor] socket_group lets a group in)"},
		{name: "SO_PEERCRED refuses another uid", mode: 0o666, cred: syscall.Credential{Uid: nobody, Gid: nobody},
			refusal: "uid 65534 may not control the supervisor on " + dir, logged: true},
		{name: "another group is refused", mode: 0o666, group: "4242",
			cred: syscall.Credential{Uid: nobody, Gid: otherGroup, Groups: []uint32{nobody}}, refusal: "uid 65534 may not control", logged: true},
		{name: "primary group admitted", group: "4242", cred: syscall.Credential{Uid: nobody, Gid: socketGid}, admitted: true},
		{name: "supplementary group admitted", group: "4242",
			cred: syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{otherGroup, socketGid}}, admitted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := filepath.Join(dir, strings.ReplaceAll(t.Name()[len("TestPeerCredentials/"):], " ", "_")[:10])
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			var logBuf syncBuffer
			b := newMemBackend("web", "db")
			ts := startServer(t, b, sub, func(c *ServerConfig) {
				c.Mode, c.Group = tc.mode, tc.group
				c.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
			})
			r := runPeer(t, bin, ts.path, &tc.cred)
			if tc.admitted {
				if !r.OK || r.Programs != 2 {
					t.Fatalf("peer %+v: %+v, want admitted with 2 programs", tc.cred, r)
				}
			} else {
				if r.OK || !r.Permission || r.Unreachable || !strings.Contains(r.Error, tc.refusal) || !strings.Contains(r.Error, tc.says) {
					t.Fatalf("peer %+v: %+v, want a permission error containing %q and %q", tc.cred, r, tc.refusal, tc.says)
				}
			}
			if got := strings.Contains(logBuf.String(), "client refused"); got != tc.logged {
				t.Errorf("server logged a refusal: %v, want %v; log:\n%s", got, tc.logged, logBuf.String())
			}
			// The server carries on for those it admits.
			if st, err := newClient(t, ts.path).Status(t.Context(), nil); err != nil || len(st) != 2 {
				t.Fatalf("status as root after the peer: %v %v", st, err)
			}
		})
	}
}

// TestClientRefusesServerOfAnotherUser: a process of another uid listening
// where the supervisor is expected must not be believed: not its table,
// not "stop worked".
func TestClientRefusesServerOfAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the squatter runs as uid 65534")
	}
	dir, bin := peerDir(t)
	sub := filepath.Join(dir, "squat")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(sub, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sub, "supervise.sock")
	cmd := exec.Command(bin)
	cmd.Env = []string{helperEnv + "=fake-server", "CTL_TEST_SOCKET=" + path}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("squatter did not start: %q %v", line, err)
	}

	c := newClient(t, path)
	st, err := c.Status(t.Context(), nil)
	var ue *UntrustedServerError
	if !errors.As(err, &ue) || ue.UID != nobody || ue.PID != cmd.Process.Pid {
		t.Fatalf("status from a uid %d listener: %v, %v; want an UntrustedServerError naming uid %d pid %d",
			nobody, st, err, nobody, cmd.Process.Pid)
	}
	if !strings.Contains(err.Error(), "--server-uid 65534") {
		t.Errorf("the refusal does not say how to trust it: %v", err)
	}
	if err := c.Stop(t.Context(), []string{"all"}, StopOptions{}); !errors.As(err, &ue) {
		t.Fatalf("stop through a uid %d listener: %v, want refused", nobody, err)
	}
	if _, err := c.Logs(t.Context(), nil, 10, false, func(logs.Line) error { return nil }), err; !errors.As(err, &ue) {
		t.Fatalf("logs through a uid %d listener: %v, want refused", nobody, err)
	}

	// Trusted by name, it is talked to.
	trusting := Dial(path, TrustServerUID(nobody))
	defer trusting.Close()
	if st, err := trusting.Status(t.Context(), nil); err != nil || len(st) != 1 || st[0].Name != "fake" {
		t.Fatalf("status with --server-uid %d: %v %v", nobody, st, err)
	}
}

// TestFallbackSocketDirIsPrivate: without a runtime directory a non-root
// supervisor's socket lives in /tmp/supervise-<uid>/, which it makes 0700
// and refuses when someone else made it first.
func TestFallbackSocketDirIsPrivate(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the squatter runs as uid 65534 through setpriv")
	}
	base, err := os.MkdirTemp("", "ctl-fallback-") // t.TempDir's parent is 0700
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o1777); err != nil { // like /tmp
		t.Fatal(err)
	}
	old := fallbackBase
	fallbackBase = base
	t.Cleanup(func() { fallbackBase = old })
	dir := fallbackDir(os.Getuid())
	path := filepath.Join(dir, "supervise.sock")
	if got := socketPath(func(string) string { return "" }, 1000); got != filepath.Join(base, "supervise-1000", "supervise.sock") {
		t.Fatalf("default path of uid 1000: %s", got)
	}
	listen := func() error {
		s := NewServer(ServerConfig{Path: path, Backend: newMemBackend("web")})
		err := s.Listen()
		s.Close()
		return err
	}

	// Missing: made private.
	if err := listen(); err != nil {
		t.Fatalf("Listen with no directory: %v", err)
	}
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 || st.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
		t.Fatalf("directory made: %v %v", st.Mode(), err)
	}
	// Already ours and private: used again.
	if err := listen(); err != nil {
		t.Fatalf("Listen in our own 0700 directory: %v", err)
	}
	os.RemoveAll(dir)

	// Made first by another user: refused, nothing bound in it.
	squat := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "mkdir", "-m", "0777", dir)
	if out, err := squat.CombinedOutput(); err != nil {
		t.Fatalf("mkdir as nobody: %v %s", err, out)
	}
	err = listen()
	if err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Fatalf("Listen in a directory of uid 65534: %v, want refused naming the owner", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("something was made in the squatted directory: %v", ents)
	}
	os.RemoveAll(dir)

	// Ours but open to others.
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	if err := listen(); err == nil || !strings.Contains(err.Error(), "has mode 0755") {
		t.Fatalf("Listen in a 0755 directory: %v, want refused", err)
	}
	os.RemoveAll(dir)

	// A symlink to a directory elsewhere.
	if err := os.Symlink(t.TempDir(), dir); err != nil {
		t.Fatal(err)
	}
	if err := listen(); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Fatalf("Listen through a symlink: %v, want refused", err)
	}
}
