package ctl

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
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
