package supervisor

import (
	"context"
	"reflect"
	"slices"
	"sync"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/watch"
)

// watchers runs one file watcher per program with a [program.N.watch]
// table. A change is a restart intent for every instance of the program (or
// its watch.signal, sent instead). Owned by the Supervisor: started by Run
// and by reloads, all stopped when Run ends.
type watchers struct {
	mu      sync.Mutex
	running bool
	byName  map[string]*programWatch
	wg      sync.WaitGroup
}

type programWatch struct {
	spec   config.Watch
	cancel context.CancelFunc
}

// syncWatchers starts, restarts or stops watchers to match cfg.
func (s *Supervisor) syncWatchers(cfg *config.Config) {
	w := &s.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.running {
		return
	}
	if w.byName == nil {
		w.byName = map[string]*programWatch{}
	}
	wanted := map[string]bool{}
	for _, p := range cfg.Programs {
		if p.Watch == nil {
			continue
		}
		wanted[p.Name] = true
		if old := w.byName[p.Name]; old != nil {
			if reflect.DeepEqual(old.spec, *p.Watch) {
				continue
			}
			old.cancel()
		}
		w.byName[p.Name] = s.startWatch(p.Name, *p.Watch, p.Dir)
	}
	for name, pw := range w.byName {
		if !wanted[name] {
			pw.cancel()
			delete(w.byName, name)
		}
	}
}

func (s *Supervisor) startWatch(name string, spec config.Watch, dir string) *programWatch {
	ctx, cancel := context.WithCancel(context.Background())
	paths := spec.Paths
	if len(paths) == 0 {
		paths = []string{dir}
	}
	// New returns with every watch in place: a change made from here on is
	// seen.
	wt, err := watch.New(watch.Config{
		Paths: paths, Include: spec.Include, Exclude: spec.Exclude, GitIgnore: spec.GitIgnore,
		Debounce: spec.Debounce, Clock: s.clock, Logger: s.log.With("program", name),
	})
	if err != nil {
		s.log.Error("watching files", "program", name, "err", err)
		return &programWatch{spec: spec, cancel: cancel}
	}
	s.watch.wg.Go(func() {
		defer wt.Close()
		err := wt.Run(ctx, func(changed []string) { s.filesChanged(name, spec, changed) })
		if err != nil && ctx.Err() == nil {
			s.log.Error("watching files", "program", name, "err", err)
		}
	})
	return &programWatch{spec: spec, cancel: cancel}
}

// filesChanged is the restart intent of a watch: one per debounced batch,
// and the queue folds whatever else comes for the key meanwhile.
func (s *Supervisor) filesChanged(name string, spec config.Watch, changed []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown {
		return
	}
	first := ""
	if len(changed) > 0 {
		first = changed[0]
	}
	var keys []string
	for key, in := range s.instances {
		if in.spec.Name != name || in.goal != goalRun {
			continue
		}
		if spec.Signal == 0 {
			keys = append(keys, key)
			continue
		}
		if in.procID != "" {
			s.log.Info("files changed; signalling", "program", key, "signal", unixsig.Name(spec.Signal), "file", first, "files", len(changed))
			if err := s.rt.Signal(in.procID, spec.Signal); err != nil {
				s.log.Warn("signalling on file change", "program", key, "err", err)
			}
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return s.instances[a].index - s.instances[b].index })
	if len(keys) > 0 {
		s.log.Info("files changed; restarting", "program", name, "instances", len(keys), "file", first, "files", len(changed))
	}
	rolled := s.rollLocked(name, keys, true)
	for _, key := range keys {
		if slices.Contains(rolled, key) {
			continue
		}
		in := s.instances[key]
		in.restartRequested = true
		askStartLocked(in, true)
		in.backoff.Reset(key)
		s.queue.Add(key)
	}
}

// startWatchers begins watching for Run; stopWatchers ends it.
func (s *Supervisor) startWatchers() {
	s.watch.mu.Lock()
	s.watch.running = true
	s.watch.mu.Unlock()
	s.mu.Lock()
	cfg := s.cfg
	s.mu.Unlock()
	s.syncWatchers(cfg)
}

func (s *Supervisor) stopWatchers() {
	s.watch.mu.Lock()
	s.watch.running = false
	for name, pw := range s.watch.byName {
		pw.cancel()
		delete(s.watch.byName, name)
	}
	s.watch.mu.Unlock()
	s.watch.wg.Wait()
}
