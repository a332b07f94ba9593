package supervisor

import (
	"cmp"
	"context"
	"slices"

	"github.com/supervise-dev/supervise/config"
)

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

// dependentsLocked returns the instances meant to run that go down
// before keys do, deepest first: the order to stop them in. With all
// (--with-dependents) that is everything that depends on keys' programs,
// directly or not; else only what restart_with binds to a program that
// keys take down whole, since a dependency with instances left is still
// there (a restart or stop of part of a program touches its dependents no
// more than a crash would). cause gives, for each, the dependency it
// follows: it runs again when that one runs.
func (s *Supervisor) dependentsLocked(keys []string, all bool) (deps []string, cause map[string]string) {
	named := map[string]bool{}
	for _, k := range keys {
		named[k] = true
	}
	down := map[string]bool{}
	var newly []string // programs gone down in the last round
	for _, k := range keys {
		if in := s.instances[k]; in != nil && !down[in.spec.Name] && (all || s.downWholeLocked(in.spec.Name, named)) {
			down[in.spec.Name] = true
			newly = append(newly, in.spec.Name)
		}
	}
	cause = map[string]string{}
	// Round by round, as far as the dependents of what went down in the
	// previous round reach: an instance's cause is the first of its
	// dependencies down by then. Only dependents are looked at (the index),
	// not every instance.
	for len(newly) > 0 {
		var found []string
		seen := map[string]bool{}
		for _, d := range newly {
			for _, p := range s.dependents[d] {
				for k, in := range s.instancesOfLocked(p) {
					if seen[k] || named[k] || in.goal != goalRun || cause[k] != "" {
						continue
					}
					seen[k] = true
					for _, dd := range in.spec.DependsOn {
						if down[dd] && (all || in.spec.RestartWith(dd)) {
							found = append(found, k)
							cause[k] = dd
							break
						}
					}
				}
			}
		}
		deps = append(deps, found...)
		newly = nil
		for _, k := range found {
			if name := s.instances[k].spec.Name; !down[name] {
				down[name] = true
				newly = append(newly, name)
			}
		}
	}
	slices.SortFunc(deps, func(a, b string) int {
		if la, lb := s.level[s.instances[a].spec.Name], s.level[s.instances[b].spec.Name]; la != lb {
			return lb - la
		}
		return cmp.Compare(a, b)
	})
	return deps, cause
}

// downWholeLocked reports whether taking down the instances named leaves
// program with none running or meant to run.
func (s *Supervisor) downWholeLocked(program string, named map[string]bool) bool {
	for k, in := range s.instancesOfLocked(program) {
		if !named[k] && (in.procID != "" || in.goal == goalRun && !endedLocked(in)) {
			return false
		}
	}
	return true
}

// stopDependents stops deps (from dependentsLocked, deepest first) level
// by level, and waits for each level to be down: what depends on a
// program stops before it, as in the shutdown.
func (s *Supervisor) stopDependents(ctx context.Context, keys []string, cause map[string]string) error {
	for len(keys) > 0 {
		s.mu.Lock()
		level := -1
		var batch []string
		for len(keys) > 0 {
			in := s.instances[keys[0]]
			if in == nil { // removed by a reload meanwhile
				keys = keys[1:]
				continue
			}
			if level >= 0 && s.level[in.spec.Name] != level {
				break
			}
			level = s.level[in.spec.Name]
			if in.goal == goalRun {
				in.goal, in.stoppedFor = goalStop, cause[in.key]
				s.events.add(in.key, string(in.state), string(in.state), "stopping: it depends on "+cause[in.key])
				s.queue.Add(in.key)
				batch = append(batch, in.key)
			}
			keys = keys[1:]
		}
		s.mu.Unlock()
		if err := s.waitSettled(ctx, batch, stoppedDone); err != nil {
			return err
		}
	}
	return nil
}

// stoppedDone is what a stop waits for: no process, and the state that
// says so (Stopped, or the Completed or Failed a stop leaves as they are),
// so that a status right after the stop shows it.
func stoppedDone(in *instance) bool {
	if in.procID != "" {
		return false
	}
	switch in.state {
	case Stopped, Completed, Failed:
		return true
	}
	return in.goal != goalStop // started again meanwhile: not ours to wait for
}

// stopDependentsLocked stops what restart_with binds to a program that
// ended for good: it is gone already, so nothing is waited for.
func (s *Supervisor) stopDependentsLocked(program string) {
	keys, cause := s.dependentsLocked(s.keysOfLocked(program), false)
	for _, k := range keys {
		in := s.instances[k]
		in.goal, in.stoppedFor = goalStop, cause[k]
		s.events.add(in.key, string(in.state), string(in.state), "stopping: it depends on "+cause[k]+", which has ended")
		s.queue.Add(k)
	}
}

// startDependentsLocked brings back what was stopped because program
// stopped: it waits (state Waiting) until program is ready again.
func (s *Supervisor) startDependentsLocked(program string) {
	// stoppedFor names a dependency: only dependents can have it.
	for _, dep := range s.dependents[program] {
		for k, in := range s.instancesOfLocked(dep) {
			if in.stoppedFor == program && in.goal == goalStop {
				in.goal, in.stoppedFor = goalRun, ""
				askStartLocked(in, false)
				s.queue.Add(k)
			}
		}
	}
}

// keysOfLocked lists the instances of program.
func (s *Supervisor) keysOfLocked(program string) []string {
	var keys []string
	for k := range s.instancesOfLocked(program) {
		keys = append(keys, k)
	}
	return keys
}

// stoppedAsideLocked reports whether in, an instance of a dependency, was
// stopped by a command while others of its program are meant to run: the
// dependency is there with those, as a program scaled down would be.
func (s *Supervisor) stoppedAsideLocked(in *instance) bool {
	if in.goal == goalRun {
		return false
	}
	for _, other := range s.instancesOfLocked(in.spec.Name) {
		if other != in && other.goal == goalRun {
			return true
		}
	}
	return false
}
