package pid1

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/supervise-dev/supervise/internal/unixsig"
	"github.com/supervise-dev/supervise/proc"
)

// sandboxed runs the command in a proc sandbox. The runtime's reaper owns
// every wait4 of the process (it reaps orphans too, we are PID 1 or it
// makes us a subreaper), so this side only signals and reads exit events.
// All of it runs on Run's goroutine.
type sandboxed struct {
	cfg   *Config
	log   *slog.Logger
	rt    *proc.Runtime
	sid   string
	sigs  chan os.Signal
	stop  bool
	extra map[int]*os.File // Config.PreserveFDs, handed over explicitly
}

func runSandboxed(ctx context.Context, cfg *Config) (int, error) {
	sigs := make(chan os.Signal, 128)
	// Not SIGCHLD: the runtime's reaper has its own.
	uncatch, _ := catchSignals(sigs, nil, handledSignals(unix.SIGCHLD), false, cfg.Logger)
	if !cfg.Dedicated {
		defer uncatch()
	}

	// One program: a spawner would cost a process and save nothing.
	rt, err := proc.New(proc.Options{Logger: cfg.Logger, Spawner: proc.SpawnerNever})
	if err != nil {
		return 1, fmt.Errorf("starting the sandbox runtime: %w", err)
	}
	defer rt.Close() // deletes the sandbox: nothing in it outlives us
	sb := cfg.Sandbox
	sid, err := rt.CreateSandbox(ctx, proc.SandboxConfig{
		Name: "exec", Namespaces: sb.Namespaces, MemoryMax: sb.MemoryMax, PidsMax: sb.PidsMax,
	})
	if err != nil {
		return 1, err
	}
	s := &sandboxed{cfg: cfg, log: cfg.Logger, rt: rt, sid: sid, sigs: sigs, extra: preserved(cfg.PreserveFDs)}
	defer func() {
		for _, f := range s.extra {
			f.Close()
		}
	}()
	return loop(ctx, cfg, s)
}

func (s *sandboxed) stopRequested() bool { return s.stop }

func (s *sandboxed) runOnce(ctx context.Context) (exit, error) {
	if len(s.cfg.Sandbox.InitArgs) == 0 {
		// The runtime's own lookup does not tell 127 from 126.
		if _, err := lookPath(s.cfg.Args[0], s.cfg.Env); err != nil {
			return exit{}, err
		}
	}
	args := append(slices.Clone(s.cfg.Sandbox.InitArgs), s.cfg.Args...)
	id, err := s.rt.Create(ctx, s.sid, proc.ProcessConfig{
		Args: args, Env: s.cfg.Env, Stdout: s.cfg.Stdout, Stderr: s.cfg.Stderr,
		StopSignal: s.cfg.StopSignal, Umask: -1, ExtraFiles: s.extra,
	})
	if err != nil {
		return exit{}, err
	}
	defer func() { _ = s.rt.Remove(context.WithoutCancel(ctx), id) }()
	if err := s.rt.Start(ctx, id); err != nil {
		return exit{}, fmt.Errorf("starting %q in its sandbox: %w", s.cfg.Args[0], err)
	}
	s.log.Debug("started in a sandbox", "sandbox", s.sid, "process", id)
	done := ctx.Done()
	for {
		select {
		case ev, ok := <-s.rt.Events():
			if !ok {
				return exit{}, errors.New("the sandbox runtime closed")
			}
			if ev.ID != id {
				continue
			}
			code := ev.ExitCode
			if ev.Signal != 0 {
				code = 128 + int(ev.Signal)
			}
			if ev.Reason == proc.ReasonOOMKilled {
				s.log.Warn("the sandbox ran out of memory (memory-max): the OOM killer struck", "exit_code", code)
			}
			s.log.Debug("command exited", "exit_code", code, "reason", string(ev.Reason))
			return exit{code: successCode(code, s.cfg.SuccessExitCodes), at: ev.FinishedAt}, nil
		case sig := <-s.sigs:
			s.forward(id, sig)
		case <-done:
			done = nil
			s.stop = true
			s.signal(id, s.cfg.StopSignal)
		}
	}
}

func (s *sandboxed) forward(id string, sg os.Signal) {
	sig, tapped := received(sg)
	if !forwardable(sig, tapped) {
		return
	}
	if isStopRequest(sig) {
		s.stop = true
	}
	if fwd := s.cfg.rewrite(sig); fwd != 0 {
		s.signal(id, fwd)
	}
}

// signal goes to the process group of the program (with InitArgs, the
// init inside, which passes it on as its flags say).
func (s *sandboxed) signal(id string, sig syscall.Signal) {
	err := s.rt.Signal(id, sig)
	if err != nil && !errors.Is(err, proc.ErrInvalidState) && !errors.Is(err, proc.ErrProcessDone) {
		s.log.Warn("forwarding a signal", "signal", unixsig.Name(sig), "err", err)
	}
}

func (s *sandboxed) waitRestart(ctx context.Context, c <-chan time.Time) bool {
	for {
		select {
		case <-c:
			return true
		case <-ctx.Done():
			s.stop = true
			return false
		case sig := <-s.sigs:
			if sig, _ := received(sig); isStopRequest(sig) {
				s.stop = true
				return false
			}
		}
	}
}

// preserved dups the open ones of descriptors 3 … 2+n, for a runtime
// that passes only what it is given; the caller closes the copies.
func preserved(n int) map[int]*os.File {
	if n == 0 {
		return nil
	}
	m := make(map[int]*os.File, n)
	for fd := 3; fd < 3+n; fd++ {
		if c, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3); err == nil {
			m[fd] = os.NewFile(uintptr(c), "fd"+strconv.Itoa(fd))
		}
	}
	return m
}
