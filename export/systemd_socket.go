package export

import (
	"cmp"
	"fmt"
	"net"
	"strings"

	"github.com/supervise-dev/supervise/internal/sockets"
)

// socketUnitName is the .socket unit that passes p's listen sockets to
// its service, as supervise does: the same name as the service, which is
// how systemd pairs them.
func (e *unitWriter) socketUnitName() string {
	return e.opts.Prefix + "-" + e.p.Name + ".socket"
}

// socketDeps makes the service need its socket unit, so that the service
// started by hand gets its sockets too.
func (e *unitWriter) socketDeps() {
	if len(e.p.Listen) == 0 || e.p.Instances > 1 {
		return
	}
	e.u("Requires", "listen", word(e.socketUnitName()))
	e.u("After", "listen", word(e.socketUnitName()))
}

// socket is the .socket unit of a program with listen, when systemd can
// express it. A unit's settings (the name, backlog, mode, owner,
// reuse_port) are the same for all its sockets: when the sockets of the
// program differ there, the first one's are written and the rest warned
// about.
func (e *unitWriter) socket() (File, bool) {
	p := e.p
	if len(p.Listen) == 0 {
		return File{}, false
	}
	if p.Instances > 1 {
		e.warn("listen", "not mapped: a .socket unit passes its sockets to one service, never to the instances of a template (run one instance, or give each a port of its own with ReusePort=)")
		return File{}, false
	}
	if p.Scheduled() {
		e.warn("listen", "a connection to the .socket unit starts the job's service at once, outside its schedule; supervise holds it in the backlog until the job's next time")
	}
	var b strings.Builder
	put := func(k string, v setting) { e.put(&b, k, "listen", v) }
	for _, s := range p.Listen {
		kind := "ListenStream"
		if !s.Stream() {
			kind = "ListenDatagram"
		}
		put(kind, plain(systemdAddress(s)))
		if (s.Network == "tcp6" || s.Network == "udp6") && strings.HasPrefix(s.Address, ":") {
			e.warn("listen", "%s: systemd's [::] follows net.ipv6.bindv6only (both IPv4 and IPv6 by default), where %s listens on IPv6 only", s, s.Network)
		}
	}
	first := p.Listen[0]
	put("FileDescriptorName", plain(cmp.Or(first.Name, p.Name)))
	for _, x := range socketSettings {
		if v, ok := x.value(first); ok {
			put(x.key, v)
		}
	}
	for _, s := range p.Listen[1:] {
		if unitSettings(s) != unitSettings(first) {
			e.warn("listen", "%s: a .socket unit has one name, backlog, mode, owner and reuse_port for all its sockets: %s's are written", s, first)
		}
	}
	put("Service", word(e.opts.Prefix+"-"+p.Name+".service"))
	var out strings.Builder
	fmt.Fprintf(&out, "# Exported by supervise from program %s (line %d): its listen sockets.\n[Unit]\n", displayComment(p.Name), p.Line)
	var unit strings.Builder
	e.put(&unit, "Description", "name", join("", lit(e.opts.Prefix+": the sockets of "), display(p.Name)))
	e.put(&unit, "PartOf", "", word(e.opts.Prefix+".target"))
	out.WriteString(unit.String())
	out.WriteString("\n[Socket]\n")
	out.WriteString(b.String())
	return File{Name: e.socketUnitName(), Data: []byte(out.String())}, true
}

// socketSettings are the settings a .socket unit has once for all its
// sockets, after FileDescriptorName: each one's value for a socket, and
// whether the socket sets it.
var socketSettings = []struct {
	key   string
	value func(s sockets.Spec) (setting, bool)
}{
	{"Backlog", func(s sockets.Spec) (setting, bool) { return lit(fmt.Sprint(s.Backlog)), s.Backlog != 0 }},
	{"SocketMode", func(s sockets.Spec) (setting, bool) { return lit(fmt.Sprintf("%04o", uint32(s.Mode))), s.Mode != 0 }},
	{"SocketUser", func(s sockets.Spec) (setting, bool) { return plain(s.Owner), s.Owner != "" }},
	{"SocketGroup", func(s sockets.Spec) (setting, bool) { return plain(s.Group), s.Group != "" }},
	{"ReusePort", func(s sockets.Spec) (setting, bool) { return lit("true"), s.ReusePort }},
}

// socketUnitSettings are the parts of a socket a .socket unit sets once
// for all its sockets.
type socketUnitSettings struct {
	name, owner, group string
	backlog            int
	mode               uint32
	reusePort          bool
}

func unitSettings(s sockets.Spec) socketUnitSettings {
	return socketUnitSettings{s.Name, s.Owner, s.Group, s.Backlog, uint32(s.Mode), s.ReusePort}
}

// systemdAddress is s's address as ListenStream= and ListenDatagram= take
// it: a path, HOST:PORT, or a bare port for every address.
func systemdAddress(s sockets.Spec) string {
	if s.Unix() {
		return s.Address
	}
	host, port, err := net.SplitHostPort(s.Address)
	if err != nil {
		return s.Address
	}
	switch {
	case host != "":
		return s.Address
	case s.Network == "tcp4" || s.Network == "udp4":
		return "0.0.0.0:" + port
	case s.Network == "tcp6" || s.Network == "udp6":
		return "[::]:" + port
	}
	return port
}
