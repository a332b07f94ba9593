package sockets

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Socket is a bound (and, for a stream, listening) socket the supervisor
// holds. Its descriptor is close-on-exec: a program gets a copy only when
// it is handed one.
type Socket struct {
	spec Spec
	file *os.File
	// dev and ino identify a unix socket's file, so Close removes it only
	// while it is still ours.
	dev, ino uint64
}

// Spec is what s was opened (or last updated) with.
func (s *Socket) Spec() Spec { return s.spec }

// Dup returns a new close-on-exec descriptor of the socket, which the
// caller owns: a process is started with copies, so that closing the held
// socket (a reload that drops it) never pulls a descriptor from under a
// start under way.
func (s *Socket) Dup() (*os.File, error) {
	fd, err := unix.FcntlInt(s.file.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicating the socket %s: %w", s.spec, err)
	}
	return os.NewFile(uintptr(fd), s.spec.String()), nil
}

// Open binds s as the passed sockets of systemd are: SO_REUSEADDR (a
// restarted supervisor binds again at once, past TIME_WAIT), close-on-exec,
// and blocking (a program that takes fd 3 as it is, like Python's
// socket.socket(fileno=3), expects a blocking socket). A unix socket's
// stale file (a socket no one answers on) is replaced; its mode and owner
// are set after the bind.
func Open(s Spec) (*Socket, error) {
	sk, err := open(s)
	if err != nil {
		return nil, fmt.Errorf("binding %s: %w", s, err)
	}
	return sk, nil
}

func open(s Spec) (*Socket, error) {
	typ := unix.SOCK_STREAM
	if !s.Stream() {
		typ = unix.SOCK_DGRAM
	}
	if s.Unix() {
		return openUnix(s, typ)
	}
	domain, sa, v6only, err := inetAddr(s)
	if err != nil {
		return nil, err
	}
	fd, err := socket(domain, typ)
	if err != nil && domain == unix.AF_INET6 && !v6only && errors.Is(err, unix.EAFNOSUPPORT) {
		// No IPv6 on this machine: every address is every IPv4 one.
		domain, sa = unix.AF_INET, &unix.SockaddrInet4{Port: sa.(*unix.SockaddrInet6).Port}
		fd, err = socket(domain, typ)
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), s.String())
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return nil, fmt.Errorf("SO_REUSEADDR: %w", err)
	}
	if s.ReusePort {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return nil, fmt.Errorf("SO_REUSEPORT: %w", err)
		}
	}
	if domain == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, boolInt(v6only)); err != nil {
			return nil, fmt.Errorf("IPV6_V6ONLY: %w", err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return nil, err
	}
	if s.Stream() {
		if err := unix.Listen(fd, s.backlog()); err != nil {
			return nil, err
		}
	}
	ok = true
	return &Socket{spec: s, file: f}, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s Spec) backlog() int {
	if s.Backlog > 0 {
		return s.Backlog
	}
	return DefaultBacklog
}

func (s Spec) mode() fs.FileMode {
	if s.Mode != 0 {
		return s.Mode
	}
	return DefaultMode
}

// inetAddr is the socket address of a tcp or udp spec. Every address
// (an empty host) of tcp and udp is dual-stack [::]; of tcp4 and udp4,
// 0.0.0.0; of tcp6 and udp6, [::] for IPv6 only.
func inetAddr(s Spec) (domain int, sa unix.Sockaddr, v6only bool, err error) {
	ap, err := netip.ParseAddrPort(s.Address)
	if err != nil {
		host, port, serr := splitEmptyHost(s.Address)
		if serr != nil || host != "" {
			return 0, nil, false, fmt.Errorf("address %q: %v", s.Address, err)
		}
		switch s.Network {
		case "tcp4", "udp4":
			return unix.AF_INET, &unix.SockaddrInet4{Port: port}, false, nil
		case "tcp6", "udp6":
			return unix.AF_INET6, &unix.SockaddrInet6{Port: port}, true, nil
		}
		return unix.AF_INET6, &unix.SockaddrInet6{Port: port}, false, nil
	}
	if ap.Addr().Is4() {
		return unix.AF_INET, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}, false, nil
	}
	return unix.AF_INET6, &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}, true, nil
}

func splitEmptyHost(addr string) (string, int, error) {
	i := len(addr) - 1
	for i >= 0 && addr[i] != ':' {
		i--
	}
	if i < 0 {
		return "", 0, errors.New("no port")
	}
	port, err := strconv.Atoi(addr[i+1:])
	return addr[:i], port, err
}

func openUnix(s Spec, typ int) (*Socket, error) {
	if err := CheckDir(s.Address); err != nil {
		return nil, err
	}
	uid, gid, err := owner(s)
	if err != nil {
		return nil, err
	}
	if err := removeStale(s.Address, typ); err != nil {
		return nil, err
	}
	fd, err := socket(unix.AF_UNIX, typ)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), s.String())
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: s.Address}); err != nil {
		return nil, err
	}
	sk := &Socket{spec: s, file: f}
	defer func() {
		if !ok {
			sk.unlink()
		}
	}()
	var st unix.Stat_t
	if err := unix.Lstat(s.Address, &st); err != nil {
		return nil, err
	}
	sk.dev, sk.ino = uint64(st.Dev), uint64(st.Ino)
	// The mode and owner come before listen: no one connects to a
	// socket with the umask's mode in between.
	if err := sk.setOwner(uid, gid); err != nil {
		return nil, err
	}
	if s.Stream() {
		if err := unix.Listen(fd, s.backlog()); err != nil {
			return nil, err
		}
	}
	ok = true
	return sk, nil
}

// removeStale removes a socket file at path that nothing listens on (the
// one a killed supervisor left). Anything else there is an error: a file
// that is not a socket is not ours to remove, and a socket someone
// answers on is in use.
func removeStale(path string, typ int) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket (%s): remove it, or listen elsewhere", path, fi.Mode().Type())
	}
	fd, err := socket(unix.AF_UNIX, typ)
	if err != nil {
		return err
	}
	err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
	unix.Close(fd)
	if err == nil {
		return fmt.Errorf("%s: %w (a process answers on it)", path, syscall.EADDRINUSE)
	}
	return os.Remove(path)
}

// owner resolves s's Owner and Group; -1 keeps ours.
func owner(s Spec) (uid, gid int, err error) {
	uid, gid = -1, -1
	if s.Owner != "" {
		if uid, err = strconv.Atoi(s.Owner); err != nil {
			u, lerr := user.Lookup(s.Owner)
			if lerr != nil {
				return 0, 0, fmt.Errorf("owner %q: %w", s.Owner, lerr)
			}
			uid, _ = strconv.Atoi(u.Uid)
			if s.Group == "" {
				gid, _ = strconv.Atoi(u.Gid)
			}
		}
	}
	if s.Group != "" {
		if gid, err = strconv.Atoi(s.Group); err != nil {
			g, lerr := user.LookupGroup(s.Group)
			if lerr != nil {
				return 0, 0, fmt.Errorf("group %q: %w", s.Group, lerr)
			}
			gid, _ = strconv.Atoi(g.Gid)
		}
	}
	return uid, gid, nil
}

func (sk *Socket) setOwner(uid, gid int) error {
	if uid >= 0 || gid >= 0 {
		if err := os.Lchown(sk.spec.Address, uid, gid); err != nil {
			return err
		}
	}
	return os.Chmod(sk.spec.Address, sk.spec.mode())
}

// Update applies n to the held socket in place when it can: a new backlog
// (listen again), a unix socket's new mode or owner, a new name. It
// reports false when n needs a new socket (another network or address,
// reuse_port switched), which the caller must open instead.
func (sk *Socket) Update(n Spec) (bool, error) {
	o := sk.spec
	if o.Network != n.Network || o.Address != n.Address || o.ReusePort != n.ReusePort {
		return false, nil
	}
	if n.Stream() && n.backlog() != o.backlog() {
		if err := unix.Listen(int(sk.file.Fd()), n.backlog()); err != nil {
			return true, fmt.Errorf("setting the backlog of %s: %w", n, err)
		}
	}
	if n.Unix() && (n.mode() != o.mode() || n.Owner != o.Owner || n.Group != o.Group) {
		uid, gid, err := owner(n)
		if err == nil {
			sk.spec = n
			err = sk.setOwner(uid, gid)
		}
		if err != nil {
			return true, fmt.Errorf("updating %s: %w", n, err)
		}
	}
	sk.spec = n
	return true, nil
}

// Close closes the socket; a unix socket's file is removed too, when it
// is still the one bound (not one put there since).
func (sk *Socket) Close() error {
	sk.unlink()
	return sk.file.Close()
}

func (sk *Socket) unlink() {
	if !sk.spec.Unix() || sk.ino == 0 {
		return
	}
	var st unix.Stat_t
	if unix.Lstat(sk.spec.Address, &st) == nil && uint64(st.Dev) == sk.dev && uint64(st.Ino) == sk.ino {
		_ = os.Remove(sk.spec.Address)
	}
}

// CheckDir refuses a unix socket path that someone else could replace:
// its directory must exist and be writable by its owner only (root or
// us), and no directory above it may be writable by everyone without the
// sticky bit.
func CheckDir(path string) error {
	dir := filepath.Dir(path)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("the socket's directory: %w", err)
	}
	for d, first := real, true; ; d, first = filepath.Dir(d), false {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("the socket's directory: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", d)
		}
		m := fi.Mode()
		st, _ := fi.Sys().(*syscall.Stat_t)
		switch {
		case first && m.Perm()&0o022 != 0:
			return fmt.Errorf("the socket's directory %s is writable by others (%04o): they could replace the socket; use a directory only its owner writes, like /run/NAME", dir, m.Perm())
		case first && st != nil && st.Uid != 0 && int(st.Uid) != os.Geteuid():
			return fmt.Errorf("the socket's directory %s belongs to uid %d, who could replace the socket; use one of root's or ours", dir, st.Uid)
		case m.Perm()&0o002 != 0 && m&fs.ModeSticky == 0:
			return fmt.Errorf("%s, above the socket, is writable by everyone", d)
		}
		if d == "/" || d == "." {
			return nil
		}
	}
}

// Privileged reports whether binding s needs privilege we lack: a port
// below net.ipv4.ip_unprivileged_port_start (1024 unless changed) without
// root or CAP_NET_BIND_SERVICE.
func Privileged(s Spec) bool {
	if s.Unix() || os.Geteuid() == 0 || hasBindCap() {
		return false
	}
	_, port, err := splitEmptyHost(s.Address)
	return err == nil && port < unprivilegedPortStart()
}

func unprivilegedPortStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start")
	if err != nil {
		return 1024
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 1024
	}
	return n
}

// hasBindCap reads CAP_NET_BIND_SERVICE (bit 10) from our effective set.
func hasBindCap() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<10) != 0
		}
	}
	return false
}
