package config

import "reflect"

// Equal reports whether p and o ask for the same thing. Line is ignored:
// moving a table in the file changes nothing.
func (p *Program) Equal(o *Program) bool {
	if p == nil || o == nil {
		return p == o
	}
	x, y := *p, *o
	x.Line, y.Line = 0, 0
	return reflect.DeepEqual(normalize(x), normalize(y))
}

// NeedsNewProcess reports whether going from p to o changes the process
// itself — its argv, directory, environment, identity or sandbox — so a
// reload must replace the running process. Anything else (restart policy,
// backoff, hooks, stop signal and timeout, dependencies, autostart, output
// sinks and file watching, which the supervisor owns, and the number of
// instances, which adds or removes instances without touching the others)
// applies to the running process as it is. Probes and ready_log_line apply to the next check;
// notify, notify_fd and watchdog change what the process is given
// (NOTIFY_SOCKET, WATCHDOG_USEC, a descriptor), so they need a new one.
func (p *Program) NeedsNewProcess(o *Program) bool {
	if p == nil || o == nil {
		return p != o
	}
	return !reflect.DeepEqual(processPart(*p), processPart(*o))
}

// processPart keeps the fields that shape the running process.
func processPart(p Program) Program {
	n := normalize(p)
	return Program{
		Name:    n.Name,
		Command: n.Command,
		Dir:     n.Dir,
		Env:     n.Env,
		User:    n.User,
		Group:   n.Group,
		Groups:  n.Groups,
		Sandbox: n.Sandbox,
		Port:    n.Port,

		Notify:   n.Notify,
		NotifyFD: n.NotifyFD,
		Watchdog: n.Watchdog,
	}
}

// normalize makes empty and nil collections compare equal.
func normalize(p Program) Program {
	if len(p.Env) == 0 {
		p.Env = nil
	}
	if len(p.EnvFiles) == 0 {
		p.EnvFiles = nil
	}
	if len(p.Groups) == 0 {
		p.Groups = nil
	}
	if len(p.DependsOn) == 0 {
		p.DependsOn = nil
	}
	p.DependsOnCond = normalizeConds(p.DependsOnCond)
	if len(p.Sandbox.Namespaces) == 0 {
		p.Sandbox.Namespaces = nil
	}
	if len(p.Sandbox.Rlimits) == 0 {
		p.Sandbox.Rlimits = nil
	}
	if p.Watch != nil {
		w := *p.Watch
		for _, s := range []*[]string{&w.Paths, &w.Include, &w.Exclude} {
			if len(*s) == 0 {
				*s = nil
			}
		}
		p.Watch = &w
	}
	return p
}

// normalizeConds drops the conditions that say the default, so that
// depends_on = ["db"] and depends_on = { db = "ready" } compare equal.
func normalizeConds(c map[string]string) map[string]string {
	var out map[string]string
	for k, v := range c {
		if v == DependReady {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}
