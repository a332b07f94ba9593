package logs

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

// The supervisor runs as root and writes log files in directories that a
// program may be able to write too. Nothing a program can put at a name is
// ever followed: the directory is reached component by component with
// O_NOFOLLOW (only symlinks owned by root are resolved, by hand), and the
// file is opened, rotated and removed relative to that directory's
// descriptor, without following its last component, without blocking (a
// FIFO), and kept only when fstat shows a regular file of ours.

// Ident is a user and a group id.
type Ident struct{ UID, GID int }

// maxSymlinks bounds the root-owned symlinks resolved in one path, as the
// kernel's own limit does.
const maxSymlinks = 40

// openDir opens the directory path (absolute), creating what is missing
// with mode 0755. A symlink on the way is followed only when root (or the
// supervisor's user) owns it. The descriptor is O_RDONLY, for renameat,
// unlinkat and reading names.
func openDir(path string) (int, error) {
	if !filepath.IsAbs(path) {
		return -1, fmt.Errorf("log directory %s: not an absolute path", path)
	}
	fd, err := unix.Open("/", oPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("log directory %s: opening /: %w", path, err)
	}
	rest := components(path)
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		next, err := openatDir(fd, name)
		if errors.Is(err, unix.ENOENT) {
			if err := unix.Mkdirat(fd, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, fmt.Errorf("log directory %s: creating %s: %w", path, name, err)
			}
			next, err = openatDir(fd, name)
		}
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			target, lerr := readRootLink(fd, name)
			if lerr != nil {
				unix.Close(fd)
				return -1, fmt.Errorf("log directory %s: %s: %w", path, name, lerr)
			}
			if links++; links > maxSymlinks {
				unix.Close(fd)
				return -1, fmt.Errorf("log directory %s: %w", path, unix.ELOOP)
			}
			if filepath.IsAbs(target) {
				unix.Close(fd)
				if fd, err = unix.Open("/", oPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
					return -1, fmt.Errorf("log directory %s: opening /: %w", path, err)
				}
			}
			rest = append(components(target), rest...)
			continue
		}
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("log directory %s: opening %s: %w", path, name, err)
		}
		fd = next
	}
	dir, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	unix.Close(fd)
	if err != nil {
		return -1, fmt.Errorf("log directory %s: %w", path, err)
	}
	return dir, nil
}

func openatDir(fd int, name string) (int, error) {
	for {
		next, err := unix.Openat(fd, name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return next, err
	}
}

// readRootLink returns the target of the symlink name in dir, refusing one
// that root did not make: it is read through a descriptor of the link
// itself, so the owner checked is the owner of the target read.
func readRootLink(dir int, name string) (string, error) {
	lfd, err := unix.Openat(dir, name, oPath|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(lfd)
	var st unix.Stat_t
	if err := unix.Fstat(lfd, &st); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return "", errors.New("not a directory")
	}
	if !privileged(int(st.Uid)) {
		return "", fmt.Errorf("a symlink owned by uid %d: only root's symlinks are followed", st.Uid)
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(lfd, "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// components splits a path into the names to walk, "." dropped.
func components(p string) []string {
	var out []string
	for c := range strings.SplitSeq(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

func privileged(uid int) bool { return uid == 0 || uid == os.Geteuid() }

// checkDir refuses a directory that someone other than root and the
// program's user can write: there, another user could plant names for the
// supervisor to write to, or read what it wrote.
func checkDir(dir int, path string, user *Ident) error {
	var st unix.Stat_t
	if err := unix.Fstat(dir, &st); err != nil {
		return fmt.Errorf("log directory %s: %w", path, err)
	}
	trusted := func(uid int) bool { return privileged(uid) || user != nil && uid == user.UID }
	switch {
	case st.Mode&0o002 != 0:
		return fmt.Errorf("log directory %s is writable by every user (mode %04o): use one only root and the program's user can write", path, st.Mode&0o7777)
	case st.Mode&0o020 != 0 && st.Gid != 0 && (user == nil || int(st.Gid) != user.GID):
		return fmt.Errorf("log directory %s is writable by group %d (mode %04o): use one only root and the program's user can write", path, st.Gid, st.Mode&0o7777)
	case !trusted(int(st.Uid)):
		return fmt.Errorf("log directory %s is owned by uid %d, neither root nor the program's user", path, st.Uid)
	}
	return nil
}

// dirPerm is the mode of new log files in dir: 0640, or 0600 when every
// user can list the directory.
func dirPerm(dir int) fs.FileMode {
	var st unix.Stat_t
	if unix.Fstat(dir, &st) == nil && st.Mode&0o004 != 0 {
		return 0o600
	}
	return 0o640
}

const openFlags = unix.O_WRONLY | unix.O_APPEND | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

// openLog opens name in dir for appending, creating it with perm (and
// owner, when not nil) if it does not exist. What stands at the name and
// is not a regular file with one link, owned by root, the owner or the
// program's user (a symlink, a FIFO, a directory, a hard link to some other
// file) is removed — its name, never what it points to — and a new file is
// made. removed says what was removed, for the caller to report.
func openLog(dir int, name string, perm fs.FileMode, owner, user *Ident) (f *os.File, removed string, err error) {
	for range 4 {
		fd, err := unix.Openat(dir, name, openFlags|unix.O_CREAT|unix.O_EXCL, uint32(perm.Perm()))
		if err == nil {
			if err := setupNew(fd, perm, owner); err != nil {
				unix.Close(fd)
				return nil, removed, err
			}
			f, err := newLogFile(fd, name)
			return f, removed, err
		}
		if !errors.Is(err, unix.EEXIST) {
			return nil, removed, err
		}
		fd, err = unix.Openat(dir, name, openFlags, 0)
		switch {
		case err == nil:
			what := foreign(fd, owner, user)
			if what == "" {
				f, err := newLogFile(fd, name)
				return f, removed, err
			}
			unix.Close(fd)
			removed = what
		case errors.Is(err, unix.ENOENT):
			continue // gone between the two opens
		case errors.Is(err, unix.ELOOP):
			removed = "a symlink"
		case errors.Is(err, unix.ENXIO):
			removed = "a FIFO or socket"
		case errors.Is(err, unix.EISDIR):
			return nil, removed, fmt.Errorf("%s is a directory", name)
		default:
			return nil, removed, err
		}
		if err := removeName(dir, name); err != nil {
			return nil, removed, fmt.Errorf("%s is %s and cannot be removed: %w", name, removed, err)
		}
	}
	return nil, removed, fmt.Errorf("%s: replaced again and again while being opened", name)
}

func newLogFile(fd int, name string) (*os.File, error) {
	// Regular files ignore O_NONBLOCK; clear it all the same so that
	// os.File treats the descriptor as the plain blocking file it is.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// setupNew gives a file just created its exact mode (the umask may have
// taken bits) and owner.
func setupNew(fd int, perm fs.FileMode, owner *Ident) error {
	if err := unix.Fchmod(fd, uint32(perm.Perm())); err != nil {
		return err
	}
	if owner != nil {
		if err := unix.Fchown(fd, owner.UID, owner.GID); err != nil {
			return fmt.Errorf("giving the file to uid %d: %w", owner.UID, err)
		}
	}
	return nil
}

// foreign returns what the open file is when it must not be written: ""
// for a regular file with one link owned by root, the owner or the
// program's user.
func foreign(fd int, owner, user *Ident) string {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "unreadable"
	}
	uid := int(st.Uid)
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFIFO || st.Mode&unix.S_IFMT == unix.S_IFSOCK:
		return "a FIFO or socket"
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return "not a regular file"
	case st.Nlink != 1:
		return "a file with several hard links"
	case !privileged(uid) && (owner == nil || uid != owner.UID) && (user == nil || uid != user.UID):
		return fmt.Sprintf("a file of uid %d", uid)
	}
	return ""
}

// removeName unlinks name in dir: a file, a symlink (not its target) or a
// FIFO; never a directory.
func removeName(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// removed reports whether the directory dir has been removed (a directory
// made again at its path is another one, to be opened and checked anew).
func removed(dir int) bool {
	var st unix.Stat_t
	return unix.Fstat(dir, &st) == nil && st.Nlink == 0
}

// readNames lists the names in dir.
func readNames(dir int) ([]string, error) {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(fd), ".")
	defer d.Close()
	return d.Readdirnames(-1)
}

// unlinked reports whether f's file has lost its last name.
func unlinked(f *os.File) bool {
	st, ok := fstat(f)
	return ok && st.Nlink == 0
}

// atName reports whether name in dir is f's file itself.
func atName(dir int, name string, f *os.File) bool {
	a, ok := fstat(f)
	var b unix.Stat_t
	if !ok || unix.Fstatat(dir, name, &b, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

func fstat(f *os.File) (*syscall.Stat_t, bool) {
	fi, err := f.Stat()
	if err != nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}
