package config

import (
	"fmt"
	"os/user"
	"strconv"
	"strings"

	"github.com/supervise-dev/supervise/internal/listenenv"
	"github.com/supervise-dev/supervise/internal/sockets"
)

// listen decodes a program's listen key: the sockets supervise binds
// before the program's first start and holds for its whole life.
func (d *decoder) listen(v *node, p *programDecoding) {
	urls, _ := d.strs(v)
	p.Listen = nil
	seen := map[string]bool{}
	for i, raw := range urls {
		path := elemOf(v, i)
		s, err := sockets.Parse(raw)
		if err != nil {
			d.errorf(path, "%v", err)
			continue
		}
		if seen[s.Key()] {
			d.errorf(path, "%s is listed twice", s.Address)
			continue
		}
		seen[s.Key()] = true
		if s.Unix() {
			if err := sockets.CheckDir(s.Address); err != nil {
				d.errorf(path, "%v", err)
			}
			for _, id := range []struct{ what, v string }{{"owner", s.Owner}, {"group", s.Group}} {
				if err := lookupID(id.what, id.v); err != nil {
					d.errorf(path, "%v", err)
				}
			}
		}
		if sockets.Privileged(s) {
			d.errorf(path, "port %s is privileged: binding it needs root or CAP_NET_BIND_SERVICE, which supervise does not have", s.Address)
		}
		p.Listen = append(p.Listen, s)
	}
}

func lookupID(what, v string) error {
	if v == "" {
		return nil
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return nil
	}
	if what == "owner" {
		if _, err := user.Lookup(v); err != nil {
			return fmt.Errorf("no user %q on this machine (the socket's owner)", v)
		}
	} else if _, err := user.LookupGroup(v); err != nil {
		return fmt.Errorf("no group %q on this machine (the socket's group)", v)
	}
	return nil
}

// checkListen numbers the program's other descriptors after its sockets:
// these take 3, 4, … (sd_listen_fds reads them there), so notify = "fd"
// defaults to the first one after them, and a notify_fd among them is
// refused.
func (d *decoder) checkListen(p *programDecoding, n *node) {
	if len(p.Listen) == 0 || p.Notify != NotifyFD {
		return
	}
	first := listenenv.FirstFD + len(p.Listen)
	if p.NotifyFD == 0 {
		p.NotifyFD = first
	} else if p.NotifyFD < first && !p.isDefaults {
		d.errorf(append(n.path[:len(n.path):len(n.path)], "notify_fd"), "descriptor %d is one of the listen sockets (3 to %d): use %d or above", p.NotifyFD, first-1, first)
	}
}

// checkListenUnique refuses an address two programs listen on: only one
// of them could bind it.
func (d *decoder) checkListenUnique(cfg *Config) {
	owner := map[string]string{}
	for _, p := range cfg.Programs {
		for i, s := range p.Listen {
			if o, ok := owner[s.Key()]; ok {
				d.errorf([]string{"program", p.Name, "listen", "[" + strconv.Itoa(i) + "]"}, "%s is program %q's already: two programs cannot listen on one address", s.Address, o)
				continue
			}
			owner[s.Key()] = p.Name
		}
	}
}

// holdPorts is the dev runner's --hold-ports: each process type's PORT
// becomes a socket supervise holds, on every address as dev servers bind
// it. Its instances (PORT+1 …) share instance 0's socket: the kernel
// spreads the connections, and a server that takes its socket from
// LISTEN_FDS never reads PORT.
//
// LISTEN_PID must name the server, not the /bin/sh running the line
// (dash forks even a line's only command): a simple line is run with
// exec; any other must exec its server itself ("cd app && exec puma").
func holdPorts(cfg *Config) {
	for _, p := range cfg.Programs {
		if p.Port == 0 {
			continue
		}
		p.Listen = []sockets.Spec{{Network: "tcp", Address: ":" + strconv.Itoa(p.Port), Name: p.Name}}
		if n := len(p.Command); n == 3 && p.Command[0] == "/bin/sh" && simpleCommand(p.Command[2]) {
			p.Command = []string{"/bin/sh", "-c", "exec " + p.Command[2]}
		}
	}
}

// simpleCommand: one command, which exec can run in the shell's place (no
// list, pipeline or subshell, no leading assignment, no exec already).
func simpleCommand(line string) bool {
	f := strings.Fields(line)
	return len(f) > 0 && f[0] != "exec" && !strings.Contains(f[0], "=") && !strings.ContainsAny(line, ";&|()`\n{}")
}
