package supervisor

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/internal/listenenv"
	"github.com/supervise-dev/supervise/internal/sockets"
	"github.com/supervise-dev/supervise/proc"
)

// listenSet holds the listening sockets of every program (socket
// activation). They are bound when the config is applied, before any
// program starts, and held by the supervisor for the program's whole
// life: every process of it, after a restart, a crash, a backoff or in a
// rolling restart, gets copies of the same sockets, so connections wait in
// the backlog instead of being refused. A reload keeps what it still
// names, binds what is new and closes what is gone.
type listenSet struct {
	mu   sync.Mutex
	held map[string]*sockets.Socket // by sockets.Spec.Key(), guarded by mu
	log  *slog.Logger
}

// listenChange is a reload's effect on the set, computed (and the new
// sockets bound) by prepare and carried out by commit.
type listenChange struct {
	opened map[string]*sockets.Socket // bound for the new config
	update map[string]sockets.Spec    // held, with options that may differ
}

// prepare binds every socket cfg names that is not held yet. It closes
// nothing held: when a bind fails (the address is in use, a privileged
// port, a bad directory) what it bound is closed again and the error
// names the file, line and key, so a refused reload keeps the running
// config and its sockets as they were.
func (l *listenSet) prepare(cfg *config.Config) (*listenChange, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := &listenChange{opened: map[string]*sockets.Socket{}, update: map[string]sockets.Spec{}}
	for _, p := range cfg.Programs {
		for i, s := range p.Listen {
			key := s.Key()
			if l.held[key] != nil {
				// Held: commit applies its options (a reuse_port switched
				// needs a new socket, which commit binds once the old one
				// is closed, or the bind would fail).
				ch.update[key] = s
				continue
			}
			sk, err := sockets.Open(s)
			if err != nil {
				ch.abort()
				return nil, fmt.Errorf("%s:%d: program.%s.listen[%d]: %w", cfg.File, p.Line, p.Name, i, err)
			}
			ch.opened[key] = sk
		}
	}
	return ch, nil
}

// abort closes what prepare bound.
func (ch *listenChange) abort() {
	for _, sk := range ch.opened {
		_ = sk.Close()
	}
}

// commit makes the prepared change: new sockets held, changed options
// applied in place (or, for reuse_port, by a new socket), the sockets no
// program names any more closed. A process still running keeps its own
// copies until it ends.
func (l *listenSet) commit(ch *listenChange) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[string]*sockets.Socket{}
	}
	for key, sk := range l.held {
		s, keep := ch.update[key]
		if !keep {
			l.log.Info("closing listen socket", "socket", sk.Spec().String())
			_ = sk.Close()
			delete(l.held, key)
			continue
		}
		same, err := sk.Update(s)
		if err != nil {
			l.log.Warn("updating listen socket", "socket", s.String(), "err", err)
		}
		if same {
			continue
		}
		_ = sk.Close()
		delete(l.held, key)
		nsk, err := sockets.Open(s)
		if err != nil {
			l.log.Error("rebinding listen socket; the program's next start fails until a reload fixes it", "socket", s.String(), "err", err)
			continue
		}
		l.held[key] = nsk
	}
	for key, sk := range ch.opened {
		l.log.Info("listening", "socket", sk.Spec().String())
		l.held[key] = sk
	}
}

// openSockets binds cfg's sockets before the first start; an error (an
// address in use, a privileged port) names file, line and key.
func (s *Supervisor) openSockets(cfg *config.Config) error {
	ch, err := s.listen.prepare(cfg)
	if err != nil {
		return err
	}
	s.listen.commit(ch)
	return nil
}

// closeAll closes every socket, at the end of Run.
func (l *listenSet) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for key, sk := range l.held {
		_ = sk.Close()
		delete(l.held, key)
	}
}

// addSockets gives pcfg copies of spec's sockets at descriptors 3, 4, …
// and the environment sd_listen_fds(3) reads; the exec stub sets
// LISTEN_PID after the fork. The caller calls closeAll (never nil) once
// the process started, or failed to.
func (l *listenSet) addSockets(spec *config.Program, pcfg *proc.ProcessConfig) (closeAll func(), err error) {
	var files []*os.File
	closeAll = func() {
		for _, f := range files {
			_ = f.Close()
		}
		files = nil
	}
	if len(spec.Listen) == 0 {
		return closeAll, nil
	}
	names := make([]string, len(spec.Listen))
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range spec.Listen {
		sk := l.held[s.Key()]
		if sk == nil {
			closeAll()
			return closeAll, errors.New("its listen socket " + s.String() + " is not held (a reload changed it)")
		}
		f, err := sk.Dup()
		if err != nil {
			closeAll()
			return closeAll, err
		}
		files = append(files, f)
		names[i] = s.Name
		if names[i] == "" {
			names[i] = spec.Name
		}
	}
	extra := map[int]*os.File{}
	for fd, f := range pcfg.ExtraFiles {
		extra[fd] = f
	}
	for i, f := range files {
		extra[listenenv.FirstFD+i] = f
	}
	pcfg.ExtraFiles = extra
	env := pcfg.Env
	for _, v := range []string{"LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"} {
		env = listenenv.WithoutVar(env, v)
	}
	pcfg.Env = append(env, listenenv.Env(names)...)
	pcfg.ListenPID = true
	return closeAll, nil
}
