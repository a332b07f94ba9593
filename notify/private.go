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

// DefaultBase is where the private directories of the notify sockets go:
// /run/supervise for root, else $XDG_RUNTIME_DIR (private to its user by
// definition), else the temporary directory. Each socket gets a fresh
// directory of its own below it, so no name there can be squatted.
func DefaultBase() string {
	if os.Geteuid() == 0 {
		if st, err := os.Stat("/run"); err == nil && st.IsDir() {
			return "/run/supervise"
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
// our fresh directory in /tmp). /run/supervise is made 0755 if missing.
func checkBase(base string) error {
	if base == "/run/supervise" {
		if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
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
