package supervisor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/supervise-dev/supervise/ctl"
)

// Scale sets how many instances each program of counts runs, until a
// reload changes the program's instances in the file. New instances start
// as a config's would (each with its SUPERVISE_INSTANCE and, in Procfile
// mode, its PORT); surplus ones are stopped with their hooks and removed,
// highest-numbered first, one after the other. A scaled program's
// instances are numbered ("web:0") even when one is left. Unless
// opts.NoWait, Scale returns when the new instances are ready and the
// surplus ones gone.
func (s *Supervisor) Scale(ctx context.Context, counts map[string]int, opts ctl.WaitOptions) error {
	s.mu.Lock()
	plan, err := s.scaleLocked(counts)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if opts.NoWait {
		s.bg.Go(func() {
			if err := s.shrink(s.ctx, plan, counts); err != nil && s.ctx.Err() == nil {
				s.log.Warn("scaling down", "err", err)
			}
		})
		return nil
	}
	return errors.Join(s.waitAllReady(ctx, plan.added, opts.Timeout, "did not start"), s.shrink(ctx, plan, counts))
}

// scalePlan is what a scale does beyond setting the counts.
type scalePlan struct {
	added    []string       // instances started
	removing []string       // instances removed at once ("web" when it becomes "web:0")
	down     map[string]int // programs to scale down one instance at a time: from how many
}

// scaleLocked sets the counts, applies the config again (which starts the
// new instances) and says what is left to do.
func (s *Supervisor) scaleLocked(counts map[string]int) (scalePlan, error) {
	plan := scalePlan{down: map[string]int{}}
	names := slices.Sorted(maps.Keys(counts))
	if s.shuttingDown {
		return plan, errors.New("supervise is shutting down")
	}
	if s.frozen {
		return plan, errUpgrading
	}
	for _, name := range names {
		if s.cfg.Program(name) == nil {
			return plan, fmt.Errorf("%w %q", ctl.ErrUnknownProgram, name)
		}
	}
	for _, name := range names {
		p := s.cfg.Program(name)
		cur, n := s.instanceCountLocked(p), counts[name]
		_, wasScaled := s.scaled[name]
		switch {
		case n > cur || n == cur && !wasScaled:
			// Up, or numbered from now on ("web" becomes "web:0").
			s.scaled[name] = n
		case n < cur && !wasScaled && p.Instances <= 1:
			s.scaled[name] = 0 // the config's single "web", to none
		case n < cur:
			plan.down[name] = cur
			if !wasScaled {
				s.scaled[name] = cur // numbered from now on: the names stay
			}
		}
		s.events.add(name, "", "Scaled", fmt.Sprintf("%d → %d instances (until a reload changes instances)", cur, n))
		s.log.Info("scaling", "program", name, "from", cur, "to", n)
	}
	before := maps.Clone(s.instances)
	s.applyLocked(s.cfg)
	for k, in := range s.instances {
		if _, named := counts[in.spec.Name]; !named {
			continue
		}
		switch {
		case before[k] == nil:
			plan.added = append(plan.added, k)
		case in.goal == goalRemove:
			plan.removing = append(plan.removing, k)
		}
	}
	slices.Sort(plan.added)
	return plan, nil
}

// shrink waits for what plan removes at once, then scales each program of
// plan.down down to its count.
func (s *Supervisor) shrink(ctx context.Context, plan scalePlan, counts map[string]int) error {
	var errs []error
	err := s.waitFor(ctx, func() bool {
		for _, k := range plan.removing {
			if s.instances[k] != nil {
				return false
			}
		}
		return true
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("waiting for %s to stop: %w", strings.Join(plan.removing, ", "), err))
	}
	for _, name := range slices.Sorted(maps.Keys(plan.down)) {
		if err := s.scaleDown(ctx, name, plan.down[name], counts[name]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// scaleDown removes name's instances from the highest-numbered down, from
// instances to n, each gone before the next is stopped.
func (s *Supervisor) scaleDown(ctx context.Context, name string, from, n int) error {
	for c := from - 1; c >= n; c-- {
		key := name + ":" + strconv.Itoa(c)
		s.mu.Lock()
		if cur, ok := s.scaled[name]; !ok || cur != c+1 || s.shuttingDown {
			s.mu.Unlock()
			return nil // a reload or another scale took over, or the end
		}
		s.scaled[name] = c
		s.applyLocked(s.cfg)
		s.mu.Unlock()
		err := s.waitFor(ctx, func() bool { return s.instances[key] == nil })
		if err != nil {
			return fmt.Errorf("waiting for %s to stop: %w", key, err)
		}
	}
	return nil
}

// emptyProgramsLocked names the programs of the config that have no
// instance left (scaled to 0), sorted: they are still programs, which
// status and /readyz know.
func (s *Supervisor) emptyProgramsLocked() []string {
	live := make(map[string]bool, len(s.cfg.Programs))
	for _, in := range s.instances {
		if in.goal != goalRemove {
			live[in.spec.Name] = true
		}
	}
	var empty []string
	for _, p := range s.cfg.Programs {
		if !live[p.Name] {
			empty = append(empty, p.Name)
		}
	}
	slices.Sort(empty)
	return empty
}
