package ctl

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// UntrustedServerError means the process listening on the socket is not
// one the client trusts: it runs as neither root, nor the client's own
// uid, nor a uid the caller named. Anyone can bind a socket where a
// supervisor is expected (in /tmp, or when it is down); the client then
// must not show that process's table as the truth, nor believe it stopped
// anything.
type UntrustedServerError struct {
	Socket string
	UID    int // the listener's uid, as the kernel recorded it
	PID    int
}

func (e *UntrustedServerError) Error() string {
	return fmt.Sprintf("refusing the server on %s: it runs as uid %d (pid %d), not as root or uid %d, so it is not your supervisor "+
		"(if it is, allow its uid with --server-uid %d)", e.Socket, e.UID, e.PID, os.Getuid(), e.UID)
}

// checkServer verifies, with the listener's credentials that the kernel
// recorded when it called listen(2), that c reaches a trusted server.
func (c *Client) checkServer(conn net.Conn) error {
	p := peerOf(conn)
	if p.err != nil {
		return fmt.Errorf("control socket %s: cannot tell who serves it: %w", c.path, p.err)
	}
	if p.uid == 0 || p.uid == os.Getuid() {
		return nil
	}
	for _, uid := range c.trusted {
		if p.uid == uid {
			return nil
		}
	}
	return &UntrustedServerError{Socket: c.path, UID: p.uid, PID: p.pid}
}

// fallbackBase holds the per-user socket directories of non-root users
// without $XDG_RUNTIME_DIR. Tests point it elsewhere.
var fallbackBase = "/tmp"

// fallbackDir is the per-user directory the default socket of uid lives in
// when there is no private runtime directory.
func fallbackDir(uid int) string {
	return filepath.Join(fallbackBase, "supervise-"+strconv.Itoa(uid))
}

// preparePrivateDir makes sure that the directory of the default non-root
// socket, and of the project sockets, is private: made by us with mode 0700, or already there as our own
// directory that no one else can enter. In a world-writable /tmp another
// user may create it first; then nothing is bound there (a socket in a
// directory someone else controls can be swapped), and the error says
// what to do. Other socket paths are the user's choice and left as given.
func preparePrivateDir(path string) error {
	dir := filepath.Dir(path)
	if dir != fallbackDir(os.Getuid()) && dir != projectDir(os.Getenv, os.Getuid()) {
		return nil
	}
	if err := makeParent(dir); err != nil {
		return err
	}
	err := os.Mkdir(dir, 0o700)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		if err != nil {
			return fmt.Errorf("control socket directory %s: %w", dir, err)
		}
		// Mkdir applied the umask; a 0700 dir is what we want either way.
		return os.Chmod(dir, 0o700)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("control socket directory %s: %w", dir, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.IsDir():
		return fmt.Errorf("control socket directory %s is not a directory (%s): remove it, or choose a socket with --socket or SUPERVISE_SOCKET",
			dir, st.Mode().Type())
	case !ok || int(sys.Uid) != os.Getuid():
		owner := -1
		if ok {
			owner = int(sys.Uid)
		}
		return fmt.Errorf("control socket directory %s belongs to uid %d, not to uid %d: another user made it; "+
			"remove it, or set XDG_RUNTIME_DIR, or choose a socket with --socket or SUPERVISE_SOCKET", dir, owner, os.Getuid())
	case st.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("control socket directory %s has mode %04o: others may enter it; make it 0700 (chmod 700 %s)",
			dir, st.Mode().Perm(), dir)
	}
	return nil
}
