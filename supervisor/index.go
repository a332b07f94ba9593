package supervisor

import (
	"slices"

	"github.com/supervise-dev/supervise/config"
)

// The indexes that keep what one program's event costs independent of
// how many programs there are: a state change, an exit or a dependency
// check looks at the instances it concerns, never at the whole fleet
// (with 10,000 programs a scan on every change made a cold start
// quadratic). They are kept under s.mu, next to s.instances.

// addInstanceLocked enters in into s.instances and the per-program index.
func (s *Supervisor) addInstanceLocked(in *instance) {
	s.instances[in.key] = in
	m := s.byProgram[in.spec.Name]
	if m == nil {
		m = map[string]*instance{}
		s.byProgram[in.spec.Name] = m
	}
	m[in.key] = in
}

// removeInstanceLocked forgets in (a removed program's instance).
func (s *Supervisor) removeInstanceLocked(in *instance) {
	delete(s.instances, in.key)
	if m := s.byProgram[in.spec.Name]; m != nil {
		delete(m, in.key)
		if len(m) == 0 {
			delete(s.byProgram, in.spec.Name)
		}
	}
	s.untrackProcLocked(in.procID, in)
	s.untrackProcLocked(in.startingID, in)
}

// instancesOfLocked are program's instances (the map is the index's:
// read it, do not keep it).
func (s *Supervisor) instancesOfLocked(program string) map[string]*instance {
	return s.byProgram[program]
}

// indexDependentsLocked rebuilds, for cfg, the programs that name each
// program in depends_on: a program's change of state wakes only those.
// An instance stopped for a dependency its new config no longer names
// still comes back with that one, as before the reload: it stays indexed
// under it.
func (s *Supervisor) indexDependentsLocked(cfg *config.Config) {
	s.dependents = map[string][]string{}
	add := func(dep, program string) {
		if !slices.Contains(s.dependents[dep], program) {
			s.dependents[dep] = append(s.dependents[dep], program)
		}
	}
	for _, p := range cfg.Programs {
		for _, d := range p.DependsOn {
			add(d, p.Name)
		}
	}
	for _, in := range s.instances {
		if in.stoppedFor != "" {
			add(in.stoppedFor, in.spec.Name)
		}
	}
}

// trackProcLocked indexes in under the id of the process it is starting,
// so that the process's exit finds it.
func (s *Supervisor) trackProcLocked(id string, in *instance) {
	if id != "" {
		s.byProc[id] = in
	}
}

// untrackProcLocked drops id, once in's process with it is gone or its
// start failed.
func (s *Supervisor) untrackProcLocked(id string, in *instance) {
	if id != "" && s.byProc[id] == in {
		delete(s.byProc, id)
	}
}
