package supervisor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/supervise-dev/supervise/config"
)

// apply installs cfg as the desired state and queues every instance whose
// desired state changed. Only the difference is touched: an unchanged
// program keeps its process; a change that needs no new process (restart
// policy, backoff, hooks, stop settings, dependencies) is applied in place.
// Called with s.mu not held.
func (s *Supervisor) apply(cfg *config.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyLocked(cfg)
}

func (s *Supervisor) applyLocked(cfg *config.Config) {
	old := s.cfg
	s.cfg = cfg
	if old != nil && old != cfg {
		s.forgetScalesLocked(old, cfg)
	}
	s.level = levels(cfg.Programs)
	s.indexDependentsLocked(cfg)
	s.logs.setRingBytes(cfg.Supervisor.LogRing)

	wanted := map[string]bool{}
	for _, p := range cfg.Programs {
		var renew []string // running instances that need a new process
		for i, key := range s.instanceKeysLocked(p) {
			wanted[key] = true
			in := s.instances[key]
			if in == nil {
				in = s.newInstance(p, key, i)
				s.addInstanceLocked(in)
				if old != nil {
					s.events.add(key, "", string(in.state), "added")
				}
				s.queue.Add(key)
				continue
			}
			if in.goal == goalRemove {
				// Put back while its removal is under way: it stays, as
				// the new config asks; a stop begun is finished (the stop
				// signal went out), then it starts anew.
				in.goal = goalStop
				if p.Autostart {
					in.goal = goalRun
					in.restartRequested = in.procID != ""
				}
				askStartLocked(in, false)
				s.queue.Add(key)
			}
			if in.spec.Equal(p) {
				continue
			}
			newProcess := in.spec.NeedsNewProcess(p)
			in.spec = p
			// A changed spec starts a fresh backoff.
			in.backoff = newCrashBackoff(p, s.clock)
			in.logs = s.logs.forKey(p, key)
			if newProcess && in.goal == goalRun {
				renew = append(renew, key)
			}
			s.queue.Add(key)
		}
		s.renewLocked(p.Name, renew)
	}
	for key, in := range s.instances {
		if !wanted[key] && !besideLocked(in) { // syncJobsLocked decides of those
			in.goal = goalRemove
			s.queue.Add(key)
		}
	}
	s.syncJobsLocked()
}

// renewLocked gives the instances keys of program name, meant to run,
// new processes of their spec: several running ones are rolled, as a
// restart does; the others (not running: their next start takes the new
// spec) get theirs at once.
func (s *Supervisor) renewLocked(name string, keys []string) {
	rolled := s.rollLocked(name, keys, false)
	for _, key := range keys {
		if !slices.Contains(rolled, key) {
			in := s.instances[key]
			in.restartRequested = true
			askStartLocked(in, false)
		}
	}
}

// ApplyConfig makes cfg the running config (a reload). The caller has
// validated it: config.Load refuses a bad file, so a bad file never gets
// here and the running config stays.
func (s *Supervisor) ApplyConfig(ctx context.Context, cfg *config.Config) error {
	_, err := s.applyConfig(cfg)
	return err
}

// applyConfig is ApplyConfig, saying what changed.
func (s *Supervisor) applyConfig(cfg *config.Config) (Changes, error) {
	if cfg == nil {
		return Changes{}, errors.New("no config")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown {
		return Changes{}, errors.New("supervise is shutting down")
	}
	if s.frozen {
		return Changes{}, errUpgrading
	}
	// Sockets first: a reload that needs an impossible bind is refused
	// before anything of it applies.
	ch, err := s.listen.prepare(cfg)
	if err != nil {
		s.reloadFailures++
		s.events.add("supervisor", "", "ReloadFailed", err.Error())
		return Changes{}, fmt.Errorf("reloading %s: %w (the running config stays)", cfg.File, err)
	}
	s.listen.commit(ch)
	changes := diffConfigs(s.cfg, cfg)
	s.applyLocked(cfg)
	s.reloads++
	s.bg.Go(func() { s.syncWatchers(cfg) }) // not under s.mu: a watcher's callback takes it
	s.events.add("supervisor", "", "Reloaded", cfg.File+": "+changes.String())
	s.log.Info("config reloaded", "file", cfg.File, "programs", len(cfg.Programs), "changes", changes.String())
	return changes, nil
}

// Changes is what a reload changed, by program name.
type Changes struct {
	Added, Removed, Changed []string
	// Renewed are the changed programs whose processes the change
	// replaces (a restart for those running).
	Renewed []string
}

// String says it in a few words: "1 added (c), 1 removed (b), 1 changed
// (a, restarted)", or "no change".
func (c Changes) String() string {
	var parts []string
	say := func(what string, names []string) {
		if len(names) == 0 {
			return
		}
		shown := names
		if len(shown) > 5 {
			shown = shown[:5]
		}
		list := strings.Join(shown, ", ")
		if len(names) > len(shown) {
			list += ", …"
		}
		if what == "changed" && len(c.Renewed) > 0 {
			list += fmt.Sprintf("; %d with new processes", len(c.Renewed))
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s)", len(names), what, list))
	}
	say("added", c.Added)
	say("removed", c.Removed)
	say("changed", c.Changed)
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, ", ")
}

// diffConfigs compares two configs program by program, in file order.
func diffConfigs(old, cfg *config.Config) Changes {
	var c Changes
	for _, p := range cfg.Programs {
		op := old.Program(p.Name)
		switch {
		case op == nil:
			c.Added = append(c.Added, p.Name)
		case !op.Equal(p):
			c.Changed = append(c.Changed, p.Name)
			if op.NeedsNewProcess(p) {
				c.Renewed = append(c.Renewed, p.Name)
			}
		}
	}
	for _, op := range old.Programs {
		if cfg.Program(op.Name) == nil {
			c.Removed = append(c.Removed, op.Name)
		}
	}
	return c
}

// forgetScalesLocked drops what scale set for a program that the new
// config removes or whose instances it changes: the file has the last
// word once it says something new.
func (s *Supervisor) forgetScalesLocked(old, cfg *config.Config) {
	for name, n := range s.scaled {
		np, op := cfg.Program(name), old.Program(name)
		if np != nil && op != nil && np.Instances == op.Instances {
			continue
		}
		delete(s.scaled, name)
		if np != nil {
			s.log.Info("the config's instances replace the scale", "program", name, "scaled", n, "instances", np.Instances)
		}
	}
}
