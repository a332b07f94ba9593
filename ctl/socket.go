package ctl

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// maxSocketPath is the room in sockaddr_un.sun_path, less the NUL.
const maxSocketPath = 107

// listenUnix creates a listening socket at path with the given mode and
// group (gid -1: leave it). The socket is bound in a fresh 0700 directory
// beside path, given its mode there, then hard-linked to path: link(2)
// fails if path exists, so the socket is never reachable with the umask's
// permissions, and a file that appears at path meanwhile is never replaced.
func listenUnix(path string, mode os.FileMode, gid int) (_ *net.UnixListener, _ os.FileInfo, retErr error) {
	if len(path) > maxSocketPath {
		return nil, nil, fmt.Errorf("control socket %s: path of %d bytes, at most %d fit in a unix socket address",
			path, len(path), maxSocketPath)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".s")
	if err != nil {
		return nil, nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	defer os.RemoveAll(tmp)
	tmpSock := filepath.Join(tmp, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmpSock, Net: "unix"})
	if err != nil {
		return nil, nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	// The name ln was bound to is gone once tmp is removed; Close removes
	// the real path itself, and only if it is still ours.
	ln.SetUnlinkOnClose(false)
	defer func() {
		if retErr != nil {
			ln.Close()
		}
	}()
	if gid >= 0 {
		if err := os.Chown(tmpSock, -1, gid); err != nil {
			return nil, nil, fmt.Errorf("control socket %s: %w", path, err)
		}
	}
	if err := os.Chmod(tmpSock, mode.Perm()); err != nil {
		return nil, nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	for attempt := 0; ; attempt++ {
		err := os.Link(tmpSock, path)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || attempt == 3 {
			return nil, nil, fmt.Errorf("control socket %s: %w", path, err)
		}
		if err := removeStale(path); err != nil {
			return nil, nil, err
		}
	}
	info, err := os.Lstat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return ln, info, nil
}

// removeStale removes the socket at path if nobody listens on it. A live
// socket is an ErrAlreadyRunning error; anything but a socket is left alone.
func removeStale(path string) error {
	before, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // gone meanwhile: link again
	}
	if err != nil {
		return fmt.Errorf("control socket %s: %w", path, err)
	}
	if before.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("control socket %s: the path exists and is not a socket; remove it or choose another socket", path)
	}
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	switch {
	case err == nil:
		c.Close()
		return fmt.Errorf("%w on %s", ErrAlreadyRunning, path)
	case errors.Is(err, syscall.EAGAIN):
		// Listening, with a full backlog: alive.
		return fmt.Errorf("%w on %s", ErrAlreadyRunning, path)
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case !errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("control socket %s: checking for a running supervise: %w", path, err)
	}
	// Nobody listens. Remove it only if it is still the socket we probed,
	// so a supervisor that started meanwhile keeps its fresh one.
	after, err := os.Lstat(path)
	if err != nil || !os.SameFile(before, after) {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("control socket %s: removing the stale socket: %w", path, err)
	}
	return nil
}
