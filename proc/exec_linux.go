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
	spec, err := r.execSpec(cfg)
	if err != nil {
		return ExecResult{}, err
	}
	sb, err := r.enterForExec(sandboxID)
	if err != nil {
		return ExecResult{}, err
	}
	defer r.leave(sb)

	var out execOutput
	stdout, stderr, err := out.files(cfg.Stdout, cfg.Stderr)
	if err != nil {
		out.finish()
		return ExecResult{}, fmt.Errorf("exec %q: output pipe: %w", cfg.Args[0], err)
	}
	run, err := r.execStart(sb, spec, stdout, stderr)
	if err != nil {
		out.finish()
		return ExecResult{}, fmt.Errorf("exec %q in sandbox %q: %w", cfg.Args[0], sandboxID, err)
	}
	if sb.init == nil {
		defer r.untrackExec(sb, run.pid)
	}
	out.closeWriters() // the child has its copies

	st, timedOut := r.execWait(ctx, sb, run)
	out.finish()
	res := r.execResult(sb, run.pid, st)
	res.TimedOut = timedOut
	if ctx.Err() != nil && !res.TimedOut {
		return res, ctx.Err()
	}
	return res, nil
}

// execSpec resolves an Exec command: its identity, working directory and
// program path.
func (r *Runtime) execSpec(cfg ExecConfig) (*spawnSpec, error) {
	if len(cfg.Args) == 0 {
		return nil, errors.New("exec: no command")
	}
	spec, err := resolveSpec(cfg.Args, cfg.Env, cfg.Dir, cfg.User, cfg.Group, nil, nil, false, -1)
	if err != nil {
		return nil, fmt.Errorf("exec %q: %w", cfg.Args[0], err)
	}
	if err := checkWorkDir(spec.Dir); err != nil {
		return nil, err
	}
	if spec.Path, err = execpath.Look(spec.Args[0], spec.Env, spec.Dir); err != nil {
		return nil, err
	}
	spec.InitPath = r.initPath
	return spec, nil
}

// enterForExec finds the sandbox and registers the Exec call with it, so a
// DeleteSandbox waits for it; the caller must leave.
func (r *Runtime) enterForExec(id string) (*sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	sb, ok := r.sandboxes[id]
	if !ok {
		return nil, fmt.Errorf("exec in sandbox %q: %w", id, ErrNotFound)
	}
	if err := sb.enterLocked(); err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	return sb, nil
}

// execOutput carries an Exec command's output to writers that are not
// files, through pipes that goroutines copy from.
type execOutput struct {
	copies  sync.WaitGroup
	readers []*os.File
	writers []*os.File // the pipes' write ends, ours until the child has them
}

// files returns the files the command writes its stdout and stderr to: the
// writers themselves when they are files (or nil), else pipes. One writer
// given for both gets one pipe.
func (o *execOutput) files(stdout, stderr io.Writer) (*os.File, *os.File, error) {
	out, err := o.file(stdout)
	if err != nil {
		return nil, nil, err
	}
	if stderr != nil && stderr == stdout {
		return out, out, nil
	}
	errf, err := o.file(stderr)
	return out, errf, err
}

func (o *execOutput) file(w io.Writer) (*os.File, error) {
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
	o.readers = append(o.readers, pr)
	o.writers = append(o.writers, pw)
	o.copies.Go(func() { _, _ = io.Copy(w, pr) })
	return pw, nil
}

func (o *execOutput) closeWriters() {
	for _, w := range o.writers {
		w.Close()
	}
	o.writers = nil
}

// finish ends the copies once the command is gone.
func (o *execOutput) finish() {
	o.closeWriters()
	// A daemonized grandchild may hold the pipe open forever: give the
	// copies a moment, then cut them off.
	done := make(chan struct{})
	go func() { o.copies.Wait(); close(done) }()
	t := time.NewTimer(time.Second)
	select {
	case <-done:
	case <-t.C:
	}
	t.Stop()
	for _, rd := range o.readers {
		rd.Close()
	}
	<-done
}

// execRun is an Exec command forked in a sandbox.
type execRun struct {
	exitCh chan exitStatus // capacity 1: the one exit report
	child  uint64          // key at the sandbox init; 0 when forked directly
	pid    int
}

// execStart forks the command: by the sandbox init when there is one, else
// directly, tracked in sb.execs so that DeleteSandbox can kill it.
func (r *Runtime) execStart(sb *sandbox, spec *spawnSpec, stdout, stderr *os.File) (*execRun, error) {
	run := &execRun{exitCh: make(chan exitStatus, 1)}
	sb.fresh.Store(false) // what it runs may be OOM-killed before a start
	var err error
	if sb.init != nil {
		run.child = r.seq.Add(1)
		run.pid, err = sb.init.start(run.child, spec, stdout, stderr, nil, run.exitCh)
		return run, err
	}
	out, errf, closeStdio, err := stdioFds(stdout, stderr)
	if err != nil {
		return nil, err
	}
	run.pid, err = r.spawnDirect(sb, spec, out, errf, nil, run.exitCh)
	closeStdio()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	sb.execs[run.pid] = true
	dying := sb.deleting
	r.mu.Unlock()
	if dying { // forked after DeleteSandbox's first kill
		_ = r.rp.kill(run.pid, true, unix.SIGKILL)
	}
	return run, nil
}

func (r *Runtime) untrackExec(sb *sandbox, pid int) {
	r.mu.Lock()
	delete(sb.execs, pid)
	r.mu.Unlock()
}

// execWait waits for the command's exit, killing it when ctx ends first;
// it reports whether ctx's deadline passed.
func (r *Runtime) execWait(ctx context.Context, sb *sandbox, run *execRun) (exitStatus, bool) {
	select {
	case st := <-run.exitCh:
		return st, false
	case <-ctx.Done():
	}
	if sb.init != nil {
		kctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _ = sb.init.call(kctx, &message{Op: opSignal, Child: run.child, Signal: int(unix.SIGKILL)})
		cancel()
	} else {
		_ = r.rp.kill(run.pid, true, unix.SIGKILL)
	}
	return <-run.exitCh, errors.Is(ctx.Err(), context.DeadlineExceeded)
}

func (r *Runtime) execResult(sb *sandbox, pid int, st exitStatus) ExecResult {
	switch {
	case st.lost:
		r.killLost(sb, pid)
		return ExecResult{ExitCode: -1, Signal: unix.SIGKILL}
	case st.ws.Signaled():
		return ExecResult{ExitCode: -1, Signal: st.ws.Signal()}
	}
	return ExecResult{ExitCode: st.ws.ExitStatus()}
}
