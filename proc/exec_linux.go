package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/supervise-dev/supervise/internal/execpath"
	"golang.org/x/sys/unix"
)

// Exec runs a short command inside a sandbox: the same namespaces (it is
// forked by the sandbox init), cgroup and identity. It returns when the
// command exited and its output was copied. When ctx's deadline passes the
// command's process group is killed and TimedOut is set; a cancelled ctx
// kills it too and returns ctx.Err().
func (r *Runtime) Exec(ctx context.Context, sandboxID string, cfg ExecConfig) (ExecResult, error) {
	if len(cfg.Args) == 0 {
		return ExecResult{}, errors.New("exec: no command")
	}
	spec, err := resolveSpec(cfg.Args, cfg.Env, cfg.Dir, cfg.User, cfg.Group, nil, nil, false, -1)
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec %q: %w", cfg.Args[0], err)
	}
	if err := checkWorkDir(spec.Dir); err != nil {
		return ExecResult{}, err
	}
	if spec.Path, err = execpath.Look(spec.Args[0], spec.Env, spec.Dir); err != nil {
		return ExecResult{}, err
	}
	spec.InitPath = r.initPath
	r.mu.Lock()
	sb, ok := r.sandboxes[sandboxID]
	closed := r.closed
	if ok && !closed {
		err = sb.enterLocked()
	}
	r.mu.Unlock()
	switch {
	case closed:
		return ExecResult{}, ErrClosed
	case !ok:
		return ExecResult{}, fmt.Errorf("exec in sandbox %q: %w", sandboxID, ErrNotFound)
	case err != nil:
		return ExecResult{}, fmt.Errorf("exec: %w", err)
	}
	defer r.leave(sb)

	var copies sync.WaitGroup
	var readers []*os.File
	outFile := func(w io.Writer) (*os.File, error) {
		switch w := w.(type) {
		case nil:
			return nil, nil
		case *os.File:
			return w, nil
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		readers = append(readers, pr)
		copies.Go(func() { _, _ = io.Copy(w, pr) })
		return pw, nil
	}
	var writers []*os.File
	stdout, err := outFile(cfg.Stdout)
	if err == nil && stdout != nil && stdout != cfg.Stdout {
		writers = append(writers, stdout)
	}
	var stderr *os.File
	if err == nil {
		if cfg.Stderr != nil && cfg.Stderr == cfg.Stdout {
			stderr = stdout
		} else if stderr, err = outFile(cfg.Stderr); err == nil && stderr != nil && stderr != cfg.Stderr {
			writers = append(writers, stderr)
		}
	}
	finishCopies := func() {
		for _, w := range writers {
			w.Close()
		}
		// A daemonized grandchild may hold the pipe open forever: give
		// the copies a moment, then cut them off.
		done := make(chan struct{})
		go func() { copies.Wait(); close(done) }()
		t := time.NewTimer(time.Second)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
		for _, rd := range readers {
			rd.Close()
		}
		<-done
	}
	if err != nil {
		finishCopies()
		return ExecResult{}, fmt.Errorf("exec %q: output pipe: %w", cfg.Args[0], err)
	}

	exitCh := make(chan exitStatus, 1)
	var child uint64
	var pid int
	if sb.init != nil {
		child = r.seq.Add(1)
		pid, err = sb.init.start(child, spec, stdout, stderr, nil, exitCh)
	} else {
		var out, errf int
		var closeStdio func()
		out, errf, closeStdio, err = stdioFds(stdout, stderr)
		if err == nil {
			pid, err = r.spawnDirect(sb, spec, out, errf, nil, exitCh)
			closeStdio()
		}
		if err == nil {
			r.mu.Lock()
			sb.execs[pid] = true
			dying := sb.deleting
			r.mu.Unlock()
			if dying { // forked after DeleteSandbox's first kill
				_ = r.rp.kill(pid, true, unix.SIGKILL)
			}
			defer func() {
				r.mu.Lock()
				delete(sb.execs, pid)
				r.mu.Unlock()
			}()
		}
	}
	if err != nil {
		finishCopies()
		return ExecResult{}, fmt.Errorf("exec %q in sandbox %q: %w", cfg.Args[0], sandboxID, err)
	}
	for _, w := range writers { // the child has its copies
		w.Close()
	}
	writers = nil

	var st exitStatus
	var res ExecResult
	select {
	case st = <-exitCh:
	case <-ctx.Done():
		if sb.init != nil {
			kctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, _ = sb.init.call(kctx, &message{Op: opSignal, Child: child, Signal: int(unix.SIGKILL)})
			cancel()
		} else {
			_ = r.rp.kill(pid, true, unix.SIGKILL)
		}
		st = <-exitCh
		res.TimedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
	}
	finishCopies()
	switch {
	case st.lost:
		r.killLost(sb, pid)
		res.ExitCode, res.Signal = -1, unix.SIGKILL
	case st.ws.Signaled():
		res.ExitCode, res.Signal = -1, st.ws.Signal()
	default:
		res.ExitCode = st.ws.ExitStatus()
	}
	if ctx.Err() != nil && !res.TimedOut {
		return res, ctx.Err()
	}
	return res, nil
}
