package supervisor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/ctl"
)

// Rolling replacement of a program's instances: a restart, a reload that
// needs new processes, or a file-change restart of a program with several
// instances replaces them in batches ([program.NAME.rollout]
// max_unavailable, default 1), and each batch's successors must be ready
// before the next batch goes, so the others keep serving.

// rolloutRun is the rollout under way for one program; a newer one for the
// same program cancels it.
type rolloutRun struct {
	cancel context.CancelFunc
	// What it still has to do, under s.mu, for an upgrade in place to
	// carry over when carry is set: the instances it has not asked yet,
	// in order, and those asked whose successors are not ready yet, with
	// the process each had.
	carry    bool
	pending  []string
	inflight map[string]string
	timeout  time.Duration
	// adopted says it came across an upgrade; replaced is every instance
	// it asked a new process of, with the process each had: a restart its
	// client resumes only waits for those.
	adopted  bool
	replaced map[string]string
	// stopped: a resumed restart took it over; it asks nothing more.
	stopped bool
	// orphan: a waiting restart's, ended for an upgrade with work left:
	// kept for the hand-over, so that the new binary finishes it if the
	// client does not come back to.
	orphan bool
}

// errSuperseded ends a rollout that a newer one of the same program
// replaced.
var errSuperseded = errors.New("superseded by a newer rollout")

// Restart replaces the named instances' processes, clearing their crash
// backoff. The instances of a program with several named are rolled (see
// above) unless opts.AllAtOnce or the program's max_unavailable covers
// them all; a successor that fails or is not ready within the timeout
// stops that rollout, the rest keep their old processes, and the error
// names it. Dependents keep running, as through a crash, unless
// opts.WithDependents, or restart_with binds them to a program restarted
// all at once: those are stopped first, deepest first, and come back once
// it runs. Unless opts.NoWait, Restart returns when every instance it
// replaced is ready.
func (s *Supervisor) Restart(ctx context.Context, names []string, opts ctl.RestartOptions) error {
	keys, programs, err := s.resolve(names)
	if err != nil {
		return err
	}
	// What a restart ended by an upgrade in place had asked for already:
	// waited for here, not restarted twice. asked grows as this one asks.
	asked := map[string]string{}
	for k, proc := range opts.Resume {
		if slices.Contains(keys, k) {
			asked[k] = proc
		}
	}
	if len(opts.Resume) > 0 {
		keys = append(keys, s.takeCarried(keys, asked)...)
	}
	resumed := maps.Clone(asked)
	keys = slices.DeleteFunc(keys, func(k string) bool { _, ok := resumed[k]; return ok })
	var errs []error
	if !opts.NoWait {
		// The successors asked for before the upgrade come first: they are
		// the batch in flight, and the rest must not go down beside it.
		for _, k := range slices.Sorted(maps.Keys(resumed)) {
			if err := s.waitReady(ctx, k, resumed[k], s.restartTimeout(k, opts.Timeout)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		err = s.restart(ctx, keys, programs, opts, asked)
	} else if len(keys) > 0 && !errors.Is(context.Cause(ctx), ctl.ErrUpgrading) {
		err = fmt.Errorf("restart stopped: %s keep their old processes", strings.Join(keys, ", "))
	}
	if err != nil {
		errs = append(errs, err)
	}
	joined := errors.Join(errs...)
	if joined != nil && (errors.Is(context.Cause(ctx), ctl.ErrUpgrading) || errors.Is(joined, ctl.ErrUpgrading)) {
		// Ended (or refused half-way) by an upgrade: the client goes on
		// with the new binary from here.
		r := &ctl.RestartResume{Asked: asked}
		for _, k := range keys {
			if _, ok := asked[k]; !ok {
				r.Remaining = append(r.Remaining, k)
			}
		}
		return &ctl.UpgradeInterrupted{Restart: r}
	}
	return joined
}

func (s *Supervisor) restartTimeout(key string, timeout time.Duration) time.Duration {
	if timeout > 0 {
		return timeout
	}
	return s.rolloutTimeout(key)
}

// restart is Restart of keys, recording in asked each instance it asked
// a new process of, with the process it had.
func (s *Supervisor) restart(ctx context.Context, keys, programs []string, opts ctl.RestartOptions, asked map[string]string) error {
	var together []string
	var rolling []rolloutPlan
	s.mu.Lock()
	for _, prog := range programs {
		var mine []string
		for _, k := range keys {
			if s.instances[k].spec.Name == prog {
				mine = append(mine, k)
			}
		}
		plan := s.planLocked(prog, mine, opts.Timeout)
		if opts.AllAtOnce || plan.batch >= len(mine) {
			together = append(together, mine...)
			continue
		}
		plan.carry = true
		rolling = append(rolling, plan)
	}
	// A rollout keeps instances serving: only --with-dependents takes
	// down what depends on it.
	downKeys := together
	if opts.WithDependents {
		downKeys = keys
	}
	deps, cause := s.dependentsLocked(downKeys, opts.WithDependents)
	s.mu.Unlock()
	if err := s.stopDependents(ctx, deps, cause); err != nil {
		return err
	}
	before, err := s.requestRestart(together)
	if err != nil {
		return err
	}
	maps.Copy(asked, before)
	if opts.NoWait {
		for _, r := range rolling {
			s.startRollout(r)
		}
		return nil
	}
	var errs []error
	for _, k := range together {
		if err := s.waitReady(ctx, k, before[k], s.restartTimeout(k, opts.Timeout)); err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range rolling {
		r.asked = asked
		if err := s.rollOut(ctx, r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// rolloutPlan is what one rollout replaces and how.
type rolloutPlan struct {
	program string
	keys    []string      // in order
	batch   int           // instances replaced at once
	timeout time.Duration // for each successor to be ready
	// asked, when set, records each instance asked a new process of, with
	// the process it had (a restart's, for its resume after an upgrade).
	asked map[string]string
	// carry: an upgrade in place hands over what is left of it (a
	// command's or a file change's; a reload's goes on from the specs of
	// the processes instead). inflight is a batch asked for before an upgrade, whose
	// successors are waited for first; adopted says it came across one.
	carry    bool
	inflight map[string]string
	adopted  bool
}

// planLocked is the rollout of keys, instances of prog, by its
// [program.NAME.rollout] settings; timeout, when set, replaces the
// program's.
func (s *Supervisor) planLocked(prog string, keys []string, timeout time.Duration) rolloutPlan {
	p := rolloutPlan{program: prog, keys: keys, batch: len(keys), timeout: timeout}
	if len(keys) == 0 {
		return p
	}
	spec := s.instances[keys[0]].spec
	p.batch = spec.Rollout.Unavailable(s.instanceCountLocked(spec))
	if p.timeout <= 0 {
		p.timeout = spec.Rollout.WaitTimeout()
	}
	return p
}

func (s *Supervisor) rolloutTimeout(key string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in := s.instances[key]; in != nil {
		return in.spec.Rollout.WaitTimeout()
	}
	return config.DefaultRolloutTimeout
}

// startRollout runs r in the background: a reload, a file change, or a
// restart with --no-wait. Its failure is logged and in the events.
func (s *Supervisor) startRollout(r rolloutPlan) {
	s.bg.Go(func() {
		if err := s.rollOut(s.ctx, r); err != nil && !errors.Is(err, errSuperseded) && s.ctx.Err() == nil {
			s.log.Warn("rolling restart stopped", "program", r.program, "err", err)
		}
	})
}

// rollOut replaces r's instances batch by batch, waiting for each batch's
// successors to be ready. A newer rollout of the same program cancels this
// one where it is (errSuperseded): the newer one replaces what is left.
func (s *Supervisor) rollOut(ctx context.Context, r rolloutPlan) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	run := &rolloutRun{cancel: func() { cancel(errSuperseded) }, carry: r.carry, pending: slices.Clone(r.keys),
		inflight: maps.Clone(r.inflight), timeout: r.timeout, adopted: r.adopted, replaced: maps.Clone(r.inflight)}
	if run.inflight == nil {
		run.inflight, run.replaced = map[string]string{}, map[string]string{}
	}
	s.mu.Lock()
	if prev := s.rollouts[r.program]; prev != nil {
		prev.cancel()
	}
	s.rollouts[r.program] = run
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.rollouts[r.program] == run {
			delete(s.rollouts, r.program)
			if run.carry && errors.Is(context.Cause(ctx), ctl.ErrUpgrading) && !run.stopped && len(run.pending)+len(run.inflight) > 0 {
				run.orphan = true
				s.rollouts[r.program] = run
			}
		}
		s.mu.Unlock()
	}()
	s.log.Info("rolling restart", "program", r.program, "instances", len(r.keys)+len(r.inflight), "at_once", r.batch)
	start := 0
	if len(r.inflight) > 0 {
		start = -r.batch // first the batch an upgrade cut short
	}
	for i := start; i < len(r.keys); i += r.batch {
		batch, before, rest := slices.Sorted(maps.Keys(r.inflight)), r.inflight, r.keys
		if i >= 0 {
			batch = r.keys[i:min(i+r.batch, len(r.keys))]
			rest = r.keys[i+len(batch):]
			var err error
			if before, err = s.requestRestartFor(batch, run); err != nil {
				return err
			}
		}
		if r.asked != nil {
			maps.Copy(r.asked, before)
		}
		var errs []error
		for _, k := range batch {
			if err := s.waitReady(ctx, k, before[k], r.timeout); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 {
			s.mu.Lock()
			clear(run.inflight)
			s.mu.Unlock()
			continue
		}
		if context.Cause(ctx) == errSuperseded {
			return fmt.Errorf("rolling restart of %s: %w", r.program, errSuperseded)
		}
		err := errors.Join(errs...)
		if len(rest) > 0 {
			err = fmt.Errorf("%w; rollout stopped: %s keep their old processes", err, strings.Join(rest, ", "))
		}
		s.mu.Lock()
		for _, k := range batch {
			if in := s.instances[k]; in != nil {
				s.events.add(k, string(in.state), string(in.state), "rollout stopped: "+err.Error())
			}
		}
		s.mu.Unlock()
		return err
	}
	return nil
}

// requestRestart asks for a new process of each key, returning the
// process each had.
func (s *Supervisor) requestRestart(keys []string) (map[string]string, error) {
	return s.requestRestartFor(keys, nil)
}

// requestRestartFor is requestRestart for the rollout run, which learns
// what it asked under the same lock, so that a hand-over sees each
// instance either still to be asked or asked, never both or neither.
func (s *Supervisor) requestRestartFor(keys []string, run *rolloutRun) (map[string]string, error) {
	before := map[string]string{}
	if len(keys) == 0 {
		return before, nil
	}
	_, err := s.command(keys, func(in *instance) {
		before[in.key] = in.procID
		if run != nil && run.stopped {
			return
		}
		if run != nil {
			run.inflight[in.key], run.replaced[in.key] = in.procID, in.procID
			run.pending = slices.DeleteFunc(run.pending, func(k string) bool { return k == in.key })
		}
		in.goal = goalRun
		in.restartRequested = true
		askStartLocked(in, true)
		in.backoff.Reset(in.key)
	})
	if err == nil && run != nil && len(before) == 0 {
		err = errSuperseded // taken over by a resumed restart
	}
	return before, err
}

// waitReady waits until key has a process other than old that is ready
// (or has completed), and reports a successor that failed, crashed or was
// not ready within timeout.
func (s *Supervisor) waitReady(ctx context.Context, key, old string, timeout time.Duration) error {
	return s.waitReadyAs(ctx, key, old, timeout, "did not come back ready")
}

// waitReadyAs is waitReady, saying failed when the instance failed.
func (s *Supervisor) waitReadyAs(ctx context.Context, key, old string, timeout time.Duration, failed string) error {
	ctx, cancel := s.withTimeout(ctx, timeout)
	defer cancel()
	var verdict error
	err := s.waitFor(ctx, func() bool {
		in := s.instances[key]
		switch {
		case in == nil:
			return true // removed by a reload meanwhile
		case s.shuttingDown:
			verdict = fmt.Errorf("%s: supervise is shutting down", key)
			return true
		case in.restartRequested:
			return false
		case in.procID != "" && in.procID != old && in.ready:
			return true
		case in.state == Completed && endedLocked(in): // a one-shot's success
			return true
		case in.state == Failed && endedLocked(in), in.state == CrashLoopBackOff, in.state == Stopped && in.goal != goalRun:
			verdict = fmt.Errorf("%s %s: %s %s", key, failed, in.state, in.message)
			return true
		}
		// Settled is cleared when a start is decided, so a Completed or
		// Failed from before the request is not taken for its outcome.
		return false
	})
	if verdict != nil {
		return verdict
	}
	if err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		state := "gone"
		if in := s.instances[key]; in != nil {
			state = string(in.state) + " " + in.message
			if in.procID != "" && in.state == Running {
				state = "running, not ready"
			}
		}
		if errors.Is(context.Cause(ctx), errTimedOut) {
			return fmt.Errorf("%s not ready within %v (%s)", key, timeout, strings.TrimSpace(state))
		}
		return fmt.Errorf("waiting for %s: %w", key, err)
	}
	return nil
}

// rollLocked replaces the running instances among keys (of program prog)
// as a rollout when they are more than one batch, else asks each for a
// new process at once. It reports the keys it rolls. For a reload and a
// file change; a command uses Restart. carry is the plan's.
func (s *Supervisor) rollLocked(prog string, keys []string, carry bool) []string {
	var running []string
	for _, k := range keys {
		if in := s.instances[k]; in != nil && in.procID != "" && in.goal == goalRun {
			running = append(running, k)
		}
	}
	plan := s.planLocked(prog, running, 0)
	if len(running) < 2 || plan.batch >= len(running) {
		return nil
	}
	plan.carry = carry
	s.startRollout(plan)
	return running
}

// errTimedOut is the cause of a context withTimeout ended.
var errTimedOut = errors.New("timed out")

// withTimeout is context.WithTimeout on the supervisor's clock (the fake
// one in tests): ctx ends with cause errTimedOut after d.
func (s *Supervisor) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := s.clock.AfterFunc(d, func() { cancel(errTimedOut) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// takeCarried is for a restart its client resumes after an upgrade:
// it takes over the rollouts carried across it of the programs of keys.
// What they have asked for goes into asked, to be waited for, not
// restarted twice; they ask nothing more; and it returns the instances
// they had still to replace that keys does not name, for the restart to
// replace.
func (s *Supervisor) takeCarried(keys []string, asked map[string]string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var more []string
	for _, k := range keys {
		in := s.instances[k]
		if in == nil {
			continue
		}
		run := s.rollouts[in.spec.Name]
		if run == nil || !run.adopted || run.stopped {
			continue
		}
		run.stopped = true
		run.cancel()
		for rk, old := range run.replaced {
			if _, mine := asked[rk]; !mine {
				asked[rk] = old
			}
		}
		for _, rk := range run.pending {
			if !slices.Contains(keys, rk) {
				more = append(more, rk)
			}
		}
	}
	return more
}
