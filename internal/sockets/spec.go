package sockets

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultBacklog is the listen backlog when none is given: systemd's, the
// kernel's SOMAXCONN since 5.4 (it clamps it to net.core.somaxconn). The
// backlog is where connections wait while the program restarts.
const DefaultBacklog = 4096

// DefaultMode is a unix socket's mode when none is given (systemd's
// SocketMode default): anyone on the machine may connect, as to a port.
const DefaultMode fs.FileMode = 0o666

// MaxPath is the longest unix socket path sockaddr_un holds (without its
// terminating NUL).
const MaxPath = 107

// maxName is the longest LISTEN_FDNAMES entry systemd accepts.
const maxName = 255

// Spec is one socket of a program's listen key.
type Spec struct {
	// Network is tcp, tcp4, tcp6, udp, udp4, udp6, unix (stream) or
	// unixgram.
	Network string
	// Address is HOST:PORT (HOST an IP address, empty for every address)
	// or, for unix and unixgram, the socket's absolute path.
	Address string
	// Name is the socket's LISTEN_FDNAMES entry; "" leaves it to the
	// caller (the supervisor names it after the program).
	Name string
	// Backlog of a stream socket; 0 is DefaultBacklog.
	Backlog int
	// ReusePort sets SO_REUSEPORT: off by default, since it lets another
	// process of the same user bind the port too and take a share of the
	// connections.
	ReusePort bool
	// Mode of a unix socket's file; 0 is DefaultMode.
	Mode fs.FileMode
	// Owner and Group of a unix socket's file (a name or a number); ""
	// keeps the supervisor's.
	Owner, Group string
}

// Stream reports whether s is a stream socket, which listens (and has a
// backlog); datagram sockets are only bound.
func (s Spec) Stream() bool {
	return s.Network == "tcp" || s.Network == "tcp4" || s.Network == "tcp6" || s.Network == "unix"
}

// Unix reports whether s is a unix socket, with a file.
func (s Spec) Unix() bool { return s.Network == "unix" || s.Network == "unixgram" }

// Key names the address alone: two specs with the same key cannot both be
// bound (without SO_REUSEPORT), whatever their options.
func (s Spec) Key() string {
	if s.Unix() {
		return "unix:" + s.Address // a stream and a datagram socket cannot share a path either
	}
	return s.family() + ":" + s.Address
}

// family is "tcp" or "udp": tcp4://127.0.0.1:80 and tcp://127.0.0.1:80
// are the same address.
func (s Spec) family() string { return strings.TrimRight(s.Network, "46") }

// String is s as a URL, the form the listen key takes.
func (s Spec) String() string {
	u := url.URL{Scheme: s.Network, Host: s.Address}
	if s.Unix() {
		u.Host, u.Path = "", s.Address
	}
	q := url.Values{}
	if s.Name != "" {
		q.Set("name", s.Name)
	}
	if s.Backlog != 0 {
		q.Set("backlog", strconv.Itoa(s.Backlog))
	}
	if s.ReusePort {
		q.Set("reuse_port", "true")
	}
	if s.Mode != 0 {
		q.Set("mode", fmt.Sprintf("%04o", uint32(s.Mode)))
	}
	if s.Owner != "" {
		q.Set("owner", s.Owner)
	}
	if s.Group != "" {
		q.Set("group", s.Group)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

var networks = []string{"tcp", "tcp4", "tcp6", "udp", "udp4", "udp6", "unix", "unixgram"}

// Parse reads one listen URL: tcp://HOST:PORT, tcp4://, tcp6://[::1]:PORT,
// udp://, udp4://, udp6://, unix:///ABSOLUTE/PATH or unixgram:///PATH,
// with options as a query: name, backlog, reuse_port, mode, owner, group
// and accept (false only). HOST is an IP address or empty (every address).
func Parse(raw string) (Spec, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Spec{}, fmt.Errorf("%q is not a URL like tcp://127.0.0.1:8080 or unix:///run/app.sock: %v", raw, err)
	}
	s := Spec{Network: u.Scheme}
	if !strings.Contains(raw, "://") || !contains(networks, s.Network) {
		return Spec{}, fmt.Errorf("%q: want a URL whose scheme is one of %s (like tcp://127.0.0.1:8080)", raw, strings.Join(networks, ", "))
	}
	if u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return Spec{}, fmt.Errorf("%q: a listen URL has no user, opaque part or fragment", raw)
	}
	if s.Unix() {
		if u.Host != "" {
			return Spec{}, fmt.Errorf("%q: a unix socket is unix:///ABSOLUTE/PATH (three slashes)", raw)
		}
		if err := checkSocketPath(u.Path); err != nil {
			return Spec{}, fmt.Errorf("%q: %w", raw, err)
		}
		s.Address = u.Path
	} else {
		addr, err := hostPort(s.Network, u.Host, u.Path)
		if err != nil {
			return Spec{}, fmt.Errorf("%q: %w", raw, err)
		}
		s.Address = addr
	}
	if err := s.options(u.Query()); err != nil {
		return Spec{}, fmt.Errorf("%q: %w", raw, err)
	}
	return s, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func checkSocketPath(p string) error {
	switch {
	case p == "" || !filepath.IsAbs(p):
		return errors.New("the socket path must be absolute: unix:///run/app.sock")
	case filepath.Clean(p) != p || strings.HasSuffix(p, "/"):
		return fmt.Errorf("the socket path %s is not clean (write %s)", p, filepath.Clean(p))
	case len(p) > MaxPath:
		return fmt.Errorf("the socket path is %d bytes long; a unix socket address holds at most %d", len(p), MaxPath)
	case strings.ContainsRune(p, 0):
		return errors.New("the socket path holds a NUL byte")
	}
	return nil
}

// hostPort checks HOST:PORT: an IP literal (or nothing) that fits the
// network, and a port from 1 to 65535 (a port the kernel picks could not
// be found by anyone).
func hostPort(network, hostport, path string) (string, error) {
	if path != "" {
		return "", fmt.Errorf("want %s://HOST:PORT with nothing after the port", network)
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", fmt.Errorf("want %s://HOST:PORT, like %s://127.0.0.1:8080 or %s://:8080 for every address", network, network, network)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("the port must be a number from 1 to 65535 (got %q)", port)
	}
	if host == "" {
		return net.JoinHostPort("", strconv.Itoa(n)), nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return "", fmt.Errorf("%q is not an IP address (host names are not resolved: a name can change under a held socket)", host)
	}
	switch {
	case strings.HasSuffix(network, "4") && !ip.Is4():
		return "", fmt.Errorf("%s needs an IPv4 address (got %s)", network, ip)
	case strings.HasSuffix(network, "6") && !ip.Is6():
		return "", fmt.Errorf("%s needs an IPv6 address in brackets (got %s)", network, ip)
	}
	return net.JoinHostPort(ip.Unmap().String(), strconv.Itoa(n)), nil
}

func (s *Spec) options(q url.Values) error {
	for k, vs := range q {
		if len(vs) != 1 {
			return fmt.Errorf("option %s given %d times", k, len(vs))
		}
		set, ok := specOptions[k]
		if !ok {
			return fmt.Errorf("unknown option %q (known: name, backlog, reuse_port, mode, owner, group, accept)", k)
		}
		if err := set(s, k, vs[0]); err != nil {
			return err
		}
	}
	if (s.Mode != 0 || s.Owner != "" || s.Group != "") && !s.Unix() {
		return errors.New("mode, owner and group apply to unix sockets only")
	}
	return nil
}

// specOptions parse a socket address's query options, one row a key; each
// checks its value and sets it on the Spec.
var specOptions = map[string]func(s *Spec, key, v string) error{
	"name":       (*Spec).setName,
	"backlog":    (*Spec).setBacklog,
	"reuse_port": (*Spec).setReusePort,
	"mode":       (*Spec).setMode,
	"owner":      (*Spec).setOwner,
	"group":      (*Spec).setOwner,
	"accept":     (*Spec).setAccept,
}

func (s *Spec) setName(_, v string) error {
	if err := checkName(v); err != nil {
		return err
	}
	s.Name = v
	return nil
}

func (s *Spec) setBacklog(_, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("backlog must be a number from 1 to 65535 (got %q)", v)
	}
	if !s.Stream() {
		return fmt.Errorf("backlog applies to stream sockets only, not %s", s.Network)
	}
	s.Backlog = n
	return nil
}

func (s *Spec) setReusePort(_, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("reuse_port must be true or false (got %q)", v)
	}
	if b && s.Unix() {
		return errors.New("reuse_port applies to tcp and udp sockets only")
	}
	s.ReusePort = b
	return nil
}

func (s *Spec) setMode(_, v string) error {
	m, err := strconv.ParseUint(v, 8, 32)
	if err != nil || m > 0o777 || m == 0 {
		return fmt.Errorf("mode must be an octal permission like 0660 (got %q)", v)
	}
	s.Mode = fs.FileMode(m)
	return nil
}

// setOwner sets the owner or the group of a unix socket's file.
func (s *Spec) setOwner(k, v string) error {
	if v == "" || strings.ContainsAny(v, ":/\x00") || len(v) > 64 {
		return fmt.Errorf("%s must be a user or group name or number (got %q)", k, v)
	}
	if k == "owner" {
		s.Owner = v
	} else {
		s.Group = v
	}
	return nil
}

func (s *Spec) setAccept(_, v string) error {
	if b, err := strconv.ParseBool(v); err != nil || b {
		return errors.New("accept can only be false: supervise passes the listening socket itself (one process serves every connection), not one connection per process as inetd does")
	}
	return nil
}

// checkName: what sd_listen_fds_with_names accepts in LISTEN_FDNAMES,
// printable ASCII without ':' (the separator), at most 255 bytes.
func checkName(n string) error {
	if n == "" || len(n) > maxName {
		return fmt.Errorf("name must be 1 to %d characters", maxName)
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c <= ' ' || c >= 0x7f || c == ':' {
			return fmt.Errorf("name %q: only printable ASCII without spaces or ':'", n)
		}
	}
	return nil
}

// CheckName reports whether n can be a LISTEN_FDNAMES entry.
func CheckName(n string) error { return checkName(n) }
