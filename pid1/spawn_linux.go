package pid1

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/supervise-dev/supervise/internal/execpath"
	"github.com/supervise-dev/supervise/internal/listenenv"
	"golang.org/x/sys/unix"
)

// lookPath finds file the way a shell does, in the PATH of env (the
// command's, not ours). Not found is a 127 StartError; found but not
// executable (a directory, no x bit) a 126 one.
func lookPath(file string, env []string) (string, error) {
	p, err := execpath.Look(file, env, "")
	var ee *execpath.Error
	if errors.As(err, &ee) {
		return "", &StartError{Code: ee.Code, Err: ee.Err}
	}
	return p, err
}

// commandPath is the file to exec for the command. A name with a slash
// goes to execve(2) as it is, without lookPath's stat and access(2) on
// every start: when the exec fails, spawn asks lookPath why, so the
// exit code and the message are the same. The socket-activation shim
// execs the command after our fork, too late to report that: for it the
// command is looked up first.
func (d *direct) commandPath() (string, error) {
	file := d.cfg.Args[0]
	if strings.Contains(file, "/") && d.cfg.ListenFDs == 0 {
		return file, nil
	}
	return lookPath(file, d.cfg.Env)
}

func notFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR)
}

// startError classifies why file could not be started: 127 when there is
// no such file, 126 when there is one that cannot be run.
func startError(file string, err error) *StartError {
	if notFound(err) {
		return &StartError{Code: 127, Err: fmt.Errorf("exec %q: no such file or directory", file)}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &StartError{Code: 126, Err: fmt.Errorf("exec %q: %w", file, err)}
}

// spawn forks and execs the command in its own process group: in a
// session of its own when it takes our terminal over or must be cut off
// from it, in the foreground when run from a shell's terminal
// (tty_linux.go). Of the descriptors
// beyond stdio, only those the caller left without close-on-exec pass
// (Config.PreserveFDs); with socket activation the command is started
// through the shim that sets LISTEN_PID.
func (d *direct) spawn(path string) (int, error) {
	sys := d.tty.sysProcAttr(d.cfg.Stdin)
	attr := &syscall.ProcAttr{
		Env:   d.cfg.Env,
		Files: []uintptr{d.cfg.Stdin.Fd(), d.cfg.Stdout.Fd(), d.cfg.Stderr.Fd()},
		Sys:   &sys,
	}
	exe, argv := path, d.cfg.Args
	if d.cfg.ListenFDs > 0 {
		self, err := os.Executable()
		if err != nil {
			return 0, &StartError{Code: 126, Err: fmt.Errorf("finding our own binary for the socket-activation shim: %w", err)}
		}
		exe, argv = self, append([]string{listenShimArgv0, path}, d.cfg.Args...)
		attr.Env = append(listenenv.WithoutVar(d.cfg.Env, "LISTEN_FDS"), "LISTEN_FDS="+strconv.Itoa(d.cfg.ListenFDs))
	}
	pid, err := syscall.ForkExec(exe, argv, attr)
	if err != nil && (d.tty == ttySession || d.tty == ttyForeground) && ttyError(err) {
		d.log.Warn("cannot hand the terminal to the command; running it without one", "err", err)
		d.tty = ttyDetached
		sys = d.tty.sysProcAttr(d.cfg.Stdin)
		pid, err = syscall.ForkExec(exe, argv, attr)
	}
	if err != nil {
		if _, lerr := lookPath(d.cfg.Args[0], d.cfg.Env); lerr != nil {
			return 0, lerr // not there, or not runnable (commandPath)
		}
		if errors.Is(err, unix.ENOENT) {
			if _, serr := os.Stat(path); serr == nil {
				return 0, &StartError{Code: 126, Err: fmt.Errorf("exec %q: its interpreter (#! line) or loader was not found", d.cfg.Args[0])}
			}
		}
		return 0, startError(d.cfg.Args[0], err)
	}
	return pid, nil
}

// ttyError: errors of the terminal ioctls in the child, as opposed to
// those of execve.
func ttyError(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EIO)
}

// descendants lists every process below us, breadth first, from the
// children files of /proc (every thread's: a child belongs to the thread
// that forked it, an orphan to whichever thread the kernel picked).
func descendants() ([]int, error) {
	var out []int
	seen := map[int]bool{}
	queue := []string{"self"}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		kids, err := children(p)
		if err != nil {
			if p == "self" {
				return nil, err
			}
			continue // it exited meanwhile
		}
		for _, k := range kids {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
				queue = append(queue, strconv.Itoa(k))
			}
		}
	}
	return out, nil
}

func children(pid string) ([]int, error) {
	dir := "/proc/" + pid + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			if pid == "self" && !notFound(err) {
				return nil, err
			}
			continue
		}
		for f := range strings.FieldsSeq(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out, nil
}
