package supervisor

import "github.com/supervise-dev/supervise/config"

// levels orders programs by dependency depth: a program's level is one more
// than the deepest of its dependencies. Start goes up the levels, shutdown
// comes down them. config has already refused cycles and unknown names.
func levels(programs []*config.Program) map[string]int {
	byName := make(map[string]*config.Program, len(programs))
	for _, p := range programs {
		byName[p.Name] = p
	}
	level := make(map[string]int, len(programs))
	var visit func(name string, depth int) int
	visit = func(name string, depth int) int {
		if l, ok := level[name]; ok {
			return l
		}
		p := byName[name]
		if p == nil || depth > len(programs) { // unknown or a cycle: config refuses both
			return 0
		}
		l := 0
		for _, d := range p.DependsOn {
			if dl := visit(d, depth+1) + 1; dl > l {
				l = dl
			}
		}
		level[name] = l
		return l
	}
	for _, p := range programs {
		visit(p.Name, 0)
	}
	return level
}
