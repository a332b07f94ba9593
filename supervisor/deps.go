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

// boundDependentsLocked returns the keys of the instances meant to run
// that are bound to one of the programs named (restart_with, directly or
// through another bound dependent), deepest first: the order to stop
// them in. cause gives, for each, the dependency it follows: it runs
// again when that one runs.
func (s *Supervisor) boundDependentsLocked(programs []string) (keys []string, cause map[string]string) {
	down := map[string]bool{}
	for _, p := range programs {
		down[p] = true
	}
	cause = map[string]string{}
	for grew := true; grew; {
		grew = false
		for k, in := range s.instances {
			if down[in.spec.Name] || in.goal != goalRun || cause[k] != "" {
				continue
			}
			for _, d := range in.spec.DependsOn {
				if down[d] && in.spec.RestartWith(d) {
					keys = append(keys, k)
					cause[k] = d
					grew = true
					break
				}
			}
		}
		for _, k := range keys {
			down[s.instances[k].spec.Name] = true
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		if la, lb := s.level[s.instances[a].spec.Name], s.level[s.instances[b].spec.Name]; la != lb {
			return lb - la
		}
		return cmp.Compare(a, b)
	})
	return keys, cause
}

// stopDependents stops, level by level from the deepest, every instance
// bound to the programs named, and waits for each level to be down: what
// depends on a program stops before it, as in the shutdown.
func (s *Supervisor) stopDependents(ctx context.Context, programs []string) error {
	s.mu.Lock()
	keys, cause := s.boundDependentsLocked(programs)
	s.mu.Unlock()
	for len(keys) > 0 {
		s.mu.Lock()
		level := s.level[s.instances[keys[0]].spec.Name]
		var batch []string
		for len(keys) > 0 {
			in := s.instances[keys[0]]
			if in == nil || s.level[in.spec.Name] != level {
				break
			}
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

// stopDependentsLocked is stopDependents for a program that ended for
// good: it is gone already, so nothing is waited for.
func (s *Supervisor) stopDependentsLocked(program string) {
	keys, cause := s.boundDependentsLocked([]string{program})
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
	for k, in := range s.instances {
		if in.stoppedFor == program && in.goal == goalStop {
			in.goal, in.stoppedFor, in.settled = goalRun, "", false
			s.queue.Add(k)
		}
	}
}
