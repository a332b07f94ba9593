package config

import (
	"reflect"
	"sync"
)

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
// itself, so a reload must replace the running process: the fields tagged
// reload:"new-process" — argv, directory, environment, identity, sandbox,
// PORT, and what the process is given to report readiness (NOTIFY_SOCKET,
// WATCHDOG_USEC, a descriptor). Anything else (restart policy, backoff,
// hooks, stop signal and timeout, dependencies, autostart, output sinks and
// file watching, which the supervisor owns; probes and ready_log_line,
// which apply to the next check; the number of instances, which adds or
// removes instances without touching the others) applies to the running
// process as it is.
func (p *Program) NeedsNewProcess(o *Program) bool {
	if p == nil || o == nil {
		return p != o
	}
	return !reflect.DeepEqual(processPart(*p), processPart(*o))
}

// processFields are the indexes of Program's reload:"new-process" fields.
var processFields = sync.OnceValue(func() []int {
	var idx []int
	t := reflect.TypeFor[Program]()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("reload") == "new-process" {
			idx = append(idx, i)
		}
	}
	return idx
})

// processPart keeps the fields that shape the running process.
func processPart(p Program) Program {
	n := reflect.ValueOf(normalize(p))
	var out Program
	o := reflect.ValueOf(&out).Elem()
	for _, i := range processFields() {
		o.Field(i).Set(n.Field(i))
	}
	return out
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
