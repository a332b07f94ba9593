// Package execpath finds the program a command names, the way a shell
// does, and says why it cannot be run with the shell's own exit codes:
// 127 when there is no such program, 126 when there is one that cannot be
// run (no execute permission, a directory).
package execpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultPath is searched when the environment has no PATH: the C
// library's and the shells' default, with the sbin directories.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Error is why a command cannot be started; Code is what a shell exits
// with for it.
type Error struct {
	File string
	Code int // 127: not found; 126: found but not runnable
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Look finds file in the PATH of env (the command's environment, not
// ours; the last PATH wins, as getenv does on a built environment). A name
// with a slash is taken as it is, relative to dir when it is relative and
// dir is set. In the PATH, a candidate that exists but cannot be run is
// remembered and the search goes on, as in a shell: only when none can be
// run is it a 126, and with no candidate at all a 127.
func Look(file string, env []string, dir string) (string, error) {
	if file == "" {
		return "", &Error{File: file, Code: 127, Err: errors.New("exec: no command")}
	}
	if strings.Contains(file, "/") {
		p := file
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if err := Runnable(p); err != nil {
			return "", classify(file, err)
		}
		return file, nil
	}
	path := DefaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	var denied error
	for d := range strings.SplitSeq(path, ":") {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, file)
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		err := Runnable(p)
		if err == nil {
			return p, nil
		}
		if denied == nil && !notFound(err) {
			denied = fmt.Errorf("%s: %w", p, err)
		}
	}
	if denied != nil {
		return "", &Error{File: file, Code: 126, Err: fmt.Errorf("exec %q: %w", file, denied)}
	}
	return "", &Error{File: file, Code: 127, Err: fmt.Errorf("exec %q: executable file not found in $PATH", file)}
}

// Runnable reports why the file at p cannot be executed by us (our
// effective ids): it is missing, a directory, or not executable.
func Runnable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return syscall.EISDIR
	}
	return unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS)
}

func notFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func classify(file string, err error) *Error {
	if notFound(err) {
		return &Error{File: file, Code: 127, Err: fmt.Errorf("exec %q: no such file or directory", file)}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &Error{File: file, Code: 126, Err: fmt.Errorf("exec %q: %w", file, err)}
}
