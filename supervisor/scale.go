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
	names := slices.Sorted(maps.Keys(counts))
	s.mu.Lock()
	if s.shuttingDown {
		s.mu.Unlock()
		return errors.New("supervise is shutting down")
	}
	for _, name := range names {
		if s.cfg.Program(name) == nil {
			s.mu.Unlock()
			return fmt.Errorf("%w %q", ctl.ErrUnknownProgram, name)
		}
	}
	var added []string
	down := map[string]int{} // programs to scale down: from how many
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
			down[name] = cur
			if !wasScaled {
				s.scaled[name] = cur // numbered from now on: the names stay
			}
		}
		s.events.add(name, "", "Scaled", fmt.Sprintf("%d → %d instances (until a reload changes instances)", cur, n))
		s.log.Info("scaling", "program", name, "from", cur, "to", n)
	}
	before := maps.Clone(s.instances)
	s.applyLocked(s.cfg)
	var removing []string // renamed or removed at once ("web" → "web:0")
	for k, in := range s.instances {
		switch {
		case before[k] == nil:
			added = append(added, k)
		case in.goal == goalRemove:
			if _, named := counts[in.spec.Name]; named {
				removing = append(removing, k)
			}
		}
	}
	s.mu.Unlock()
	slices.Sort(added)

	shrink := func(ctx context.Context) error {
		var errs []error
		if err := s.waitFor(ctx, func() bool {
			for _, k := range removing {
				if s.instances[k] != nil {
					return false
				}
			}
			return true
		}); err != nil {
			errs = append(errs, fmt.Errorf("waiting for %s to stop: %w", strings.Join(removing, ", "), err))
		}
		for _, name := range slices.Sorted(maps.Keys(down)) {
			if err := s.scaleDown(ctx, name, down[name], counts[name]); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	if opts.NoWait {
		s.bg.Go(func() {
			if err := shrink(s.ctx); err != nil && s.ctx.Err() == nil {
				s.log.Warn("scaling down", "err", err)
			}
		})
		return nil
	}
	return errors.Join(s.waitAllReady(ctx, added, opts.Timeout, "did not start"), shrink(ctx))
}

// scaleDown removes name's instances from the highest-numbered down, from
// instances to n, each gone before the next is stopped.
func (s *Supervisor) scaleDown(ctx context.Context, name string, from, n int) error {
	for c := from - 1; c >= n; c-- {
		key := name + ":" + strconv.Itoa(c)
		s.mu.Lock()
		if n, ok := s.scaled[name]; !ok || n != c+1 || s.shuttingDown {
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
