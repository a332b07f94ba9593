package notify

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Owner is the user a program runs as, when it is another one than ours.
type Owner struct{ UID, GID int }

// root's runtime directory is shared with the dev runners' control
// sockets, each use in a directory of its own with the mode it needs:
//
//	/run/supervise         0755  nothing bound here
//	/run/supervise/notify  0711  the notify sockets' private directories:
//	                             programs running as other users pass
//	                             through to theirs, and list nothing
//	/run/supervise/ctl     0700  dev runners' control sockets (see ctl)
const (
	runDir       = "/run/supervise"
	runNotifyDir = runDir + "/notify"
)

// DefaultBase is where the private directories of the notify sockets go:
// /run/supervise/notify for root, else $XDG_RUNTIME_DIR (private to its
// user by definition), else the temporary directory. Each socket gets a
// fresh directory of its own below it, so no name there can be squatted.
func DefaultBase() string {
	if os.Geteuid() == 0 {
		if st, err := os.Stat("/run"); err == nil && st.IsDir() {
			return runNotifyDir
		}
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return d
	}
	return os.TempDir()
}

// ListenPrivate binds a notify socket that only the program can reach and
// only we can replace: in a directory made fresh below base (mode 0711:
// others may pass through, not list or create), as base/NAME-XXXX/notify,
// mode 0600 and owned by owner when the program runs as another user (a
// unix socket needs write permission to send to). base must be root's or
// ours, and writable by no one else unless sticky (see checkBase). Close
// removes the socket and its directory.
func ListenPrivate(base, name string, owner *Owner) (_ *Socket, retErr error) {
	if err := checkBase(base); err != nil {
		return nil, fmt.Errorf("notify socket directory: %w", err)
	}
	if len(name) > 32 {
		name = name[:32] // sun_path holds 107 bytes
	}
	dir, err := os.MkdirTemp(base, name+"-")
	if err != nil {
		return nil, fmt.Errorf("notify socket directory: %w", err)
	}
	defer func() {
		if retErr != nil {
			os.RemoveAll(dir)
		}
	}()
	path := filepath.Join(dir, "notify")
	s, err := ListenSocket(path)
	if err != nil {
		return nil, err
	}
	// dir is ours and 0700 until the end of this: the names in it cannot
	// be swapped under the chown and chmod.
	if owner != nil {
		if err := os.Lchown(path, owner.UID, owner.GID); err != nil {
			s.Close()
			return nil, fmt.Errorf("notify socket %s: giving it to uid %d: %w", path, owner.UID, err)
		}
	}
	if err := chmodDir(dir, 0o711); err != nil {
		s.Close()
		return nil, fmt.Errorf("notify socket directory %s: %w", dir, err)
	}
	s.dir = dir
	return s, nil
}

// chmodDir sets the mode through a descriptor of dir, never following a
// symlink put in its place.
func chmodDir(dir string, mode fs.FileMode) error {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	return syscall.Fchmod(fd, uint32(mode.Perm()))
}

// checkBase refuses a base that another user could use against us: not a
// real directory, owned by someone other than root or us, or writable by
// others without the sticky bit (which is what keeps them from renaming
// our fresh directory in /tmp). /run/supervise/notify is made if missing.
func checkBase(base string) error {
	if base == runNotifyDir {
		if err := makeRunNotifyDir(); err != nil {
			return err
		}
	}
	st, err := os.Lstat(base)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.IsDir() || !ok:
		return fmt.Errorf("%s is not a directory (%v)", base, st.Mode().Type())
	case sys.Uid != 0 && int(sys.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to uid %d: refusing to put sockets in it", base, sys.Uid)
	case st.Mode().Perm()&0o022 != 0 && st.Mode()&fs.ModeSticky == 0:
		return fmt.Errorf("%s is writable by others (mode %v) and not sticky: refusing to put sockets in it", base, st.Mode().Perm())
	}
	return nil
}

// makeRunNotifyDir makes /run/supervise (0755) and /run/supervise/notify
// (0711) when missing. A /run/supervise that an older supervise made 0700
// for its dev runners' sockets is opened for passing through (not for
// listing): programs running as other users must reach their sockets
// below it, and the control sockets have a directory of their own now.
func makeRunNotifyDir() error {
	if err := os.Mkdir(runDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	st, err := os.Lstat(runDir)
	if err != nil {
		return err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && st.IsDir() && sys.Uid == 0 && st.Mode().Perm()&0o011 != 0o011 {
		if err := chmodDir(runDir, st.Mode().Perm()|0o011); err != nil {
			return fmt.Errorf("%s: letting programs pass through to their sockets: %w", runDir, err)
		}
	}
	if err := os.Mkdir(runNotifyDir, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}
