package sockets

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// An address without a host binds every address of the network's family:
// 0.0.0.0 for tcp4, [::] IPv6 only for tcp6, [::] dual-stack for tcp.
func TestOpenEveryAddress(t *testing.T) {
	if _, err := os.Stat("/proc/sys/net/ipv6"); err != nil {
		t.Skip("no IPv6 in this kernel")
	}
	_, port, _ := net.SplitHostPort(freePort(t))
	for _, c := range []struct {
		network string
		family  int
		v6only  int // -1: not an IPv6 socket
	}{
		{"tcp4", unix.AF_INET, -1},
		{"tcp6", unix.AF_INET6, 1},
		{"tcp", unix.AF_INET6, 0},
	} {
		t.Run(c.network, func(t *testing.T) {
			sk := mustOpen(t, c.network+"://:"+port)
			fd := int(sk.file.Fd())
			sa, err := unix.Getsockname(fd)
			if err != nil {
				t.Fatal(err)
			}
			var family int
			switch a := sa.(type) {
			case *unix.SockaddrInet4:
				family = unix.AF_INET
				if a.Addr != [4]byte{} {
					t.Errorf("bound to %v, want 0.0.0.0", a.Addr)
				}
			case *unix.SockaddrInet6:
				family = unix.AF_INET6
				if a.Addr != [16]byte{} {
					t.Errorf("bound to %v, want [::]", a.Addr)
				}
			}
			if family != c.family {
				t.Fatalf("socket family %d, want %d", family, c.family)
			}
			if c.v6only < 0 {
				return
			}
			v, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY)
			if err != nil || v != c.v6only {
				t.Errorf("IPV6_V6ONLY = %d (%v), want %d", v, err, c.v6only)
			}
		})
	}
}

// Owner and group given by name resolve through the account database; an
// owner alone brings its primary group; an unknown name fails naming it.
func TestOpenUnixOwnerNames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's owner needs root")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "a.sock")
	sk := mustOpen(t, "unix://"+path+"?owner=nobody")
	var st syscall.Stat_t
	if err := syscall.Lstat(sk.Spec().Address, &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != 65534 || st.Gid != 65534 {
		t.Errorf("owner=nobody: file owned by %d:%d, want 65534:65534 (nobody and its group)", st.Uid, st.Gid)
	}

	path = filepath.Join(dir, "b.sock")
	sk = mustOpen(t, "unix://"+path+"?owner=nobody&group=root")
	if err := syscall.Lstat(sk.Spec().Address, &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != 65534 || st.Gid != 0 {
		t.Errorf("owner=nobody&group=root: file owned by %d:%d, want 65534:0", st.Uid, st.Gid)
	}

	for _, q := range []string{"owner=no-such-user-here", "group=no-such-group-here"} {
		s, err := Parse("unix://" + filepath.Join(dir, "c.sock") + "?" + q)
		if err != nil {
			t.Fatal(err)
		}
		sk, err := Open(s)
		if err == nil {
			sk.Close()
			t.Fatalf("%s: Open succeeded", q)
		}
		name := strings.SplitN(q, "=", 2)[1]
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %q does not name %q", q, err, name)
		}
		if _, err := os.Lstat(filepath.Join(dir, "c.sock")); err == nil {
			t.Errorf("%s: the failed socket's file was left behind", q)
		}
	}
}
