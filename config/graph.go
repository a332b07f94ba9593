package config

// The checks across programs: unknown names, dependency cycles, shared log files.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// crossCheck finds what no single program shows: unknown names in
// depends_on and exit_on, dependency cycles, two programs writing one file.
func (d *decoder) crossCheck(cfg *Config) {
	byName := map[string]*Program{}
	for _, p := range cfg.Programs {
		byName[p.Name] = p
	}
	// A program refused for a bad name is not in byName; don't report
	// references to it as unknown too.
	exists := func(name string) bool {
		return byName[name] != nil || d.refused[name]
	}
	for _, p := range cfg.Programs {
		for i, dep := range p.DependsOn {
			if !exists(dep) {
				d.errorf(d.deps[p][i], "unknown program %q%s", dep, didYouMean(dep, byName))
			}
		}
	}
	for i, name := range cfg.Supervisor.ExitOn {
		if !exists(name) {
			d.errorf(d.exitOn[i], "unknown program %q%s", name, didYouMean(name, byName))
		}
	}
	d.checkCompleted(cfg)
	d.checkScheduled(cfg)
	d.checkListenUnique(cfg)
	for _, cycle := range findCycles(cfg.Programs) {
		first := byName[cycle[0]]
		path := []string{"program", first.Name, "depends_on"}
		if i := slices.Index(first.DependsOn, cycle[1]); i >= 0 {
			path = d.deps[first][i]
		}
		d.errorf(path, "dependency cycle: %s", strings.Join(cycle, " -> "))
	}
	files := map[string]string{}
	for _, p := range cfg.Programs {
		for _, s := range []struct {
			name string
			out  Output
		}{{"stdout", p.Stdout}, {"stderr", p.Stderr}} {
			if s.out.File == "" {
				continue
			}
			prev, ok := files[s.out.File]
			switch {
			case !ok:
				files[s.out.File] = "program." + p.Name + "." + s.name + ".file"
			case !strings.HasPrefix(prev, "program."+p.Name+"."): // stdout and stderr may share one
				d.errorf([]string{"program", p.Name, s.name, "file"}, "%s is already the log of %s: one file per program", s.out.File, prev)
			}
		}
	}
}

func didYouMean(name string, byName map[string]*Program) string {
	if s := suggest(name, slices.Sorted(maps.Keys(byName))); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// findCycles returns one cycle per strongly connected component of the
// dependency graph that has one, each starting at its first program in file
// order and ending where it started: [a b c a].
func findCycles(progs []*Program) [][]string {
	order := map[string]int{}
	for i, p := range progs {
		order[p.Name] = i
	}
	byName := map[string]*Program{}
	for _, p := range progs {
		byName[p.Name] = p
	}
	// Tarjan's algorithm over programs in file order.
	var (
		index   = map[string]int{}
		low     = map[string]int{}
		onStack = map[string]bool{}
		stack   []string
		cycles  [][]string
		next    int
	)
	var connect func(v string)
	connect = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range byName[v].DependsOn {
			if byName[w] == nil {
				continue
			}
			if _, seen := index[w]; !seen {
				connect(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var scc []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			scc = append(scc, w)
			if w == v {
				break
			}
		}
		if len(scc) == 1 && !slices.Contains(byName[v].DependsOn, v) {
			return
		}
		slices.SortFunc(scc, func(a, b string) int { return order[a] - order[b] })
		cycles = append(cycles, cycleIn(scc, byName))
	}
	for _, p := range progs {
		if _, seen := index[p.Name]; !seen {
			connect(p.Name)
		}
	}
	slices.SortFunc(cycles, func(a, b []string) int { return order[a[0]] - order[b[0]] })
	return cycles
}

// cycleIn finds a cycle through scc[0] inside the component, by a
// breadth-first search, so the cycle it names is a shortest one.
func cycleIn(scc []string, byName map[string]*Program) []string {
	in := map[string]bool{}
	for _, s := range scc {
		in[s] = true
	}
	start := scc[0]
	prev := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range byName[v].DependsOn {
			if !in[w] {
				continue
			}
			if w == start {
				cycle := []string{start}
				for x := v; x != start; x = prev[x] {
					cycle = append(cycle, x)
				}
				slices.Reverse(cycle[1:])
				return append(cycle, start)
			}
			if _, seen := prev[w]; !seen {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return append(slices.Clone(scc), start) // unreachable for a true component
}
