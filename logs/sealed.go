package logs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/supervise-dev/supervise/internal/consolepath"
	"golang.org/x/sys/unix"
)

// Two kinds of log directory, two rules for what stands at the log's name
// when it is not a regular file of ours:
//
//   - in a directory the program's user can write, the program may have put
//     it there (a symlink to a root file, a FIFO to block us): the name is
//     removed and a fresh file made (openLog), never followed;
//   - in a sealed directory, one only root (or supervise's own user) can
//     write, no program put anything there: what stands at the name is the
//     administrator's and is never removed, replaced or truncated. A
//     symlink root made is written through (/var/log/app.log -> /proc/self/fd/1
//     is a container's console) as long as every directory it leads
//     through is sealed too and every link on the way is root's; anything
//     else (a FIFO, a device, a directory, another user's file) is refused
//     with an error naming it.

// sealed reports whether only root (or supervise's user) can write dir.
func sealed(dir int) bool {
	var st unix.Stat_t
	if unix.Fstat(dir, &st) != nil {
		return false
	}
	return privileged(int(st.Uid)) && st.Mode&0o002 == 0 && (st.Mode&0o020 == 0 || st.Gid == 0)
}

// openName opens the log's name in its directory under the rules above,
// noting in f.through whether the lines go through a symlink (then nothing
// is rotated: the file behind it is not ours to rename or empty).
func (f *File) openName() (*os.File, string, error) {
	fd, through, removed, err := openIn(f.dir, filepath.Dir(f.absPath()), f.base, f.cfg.Perm, f.cfg.Owner, f.cfg.User, 0)
	f.through = through
	return fd, removed, err
}

func openIn(dir int, dirPath, name string, perm fs.FileMode, owner, user *Ident, links int) (f *os.File, through bool, removed string, err error) {
	if !sealed(dir) {
		if links > 0 {
			return nil, false, "", fmt.Errorf("a symlink leads to %s, a directory someone other than root can write: not followed", dirPath)
		}
		f, removed, err = openLog(dir, name, perm, owner, user)
		return f, false, removed, err
	}
	var st unix.Stat_t
	err = unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return nil, false, "", err
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		f, err = openThrough(dir, dirPath, name, owner, user, links+1)
		return f, true, "", err
	default:
		if what := foreignStat(&st, owner, user); what != "" {
			return nil, false, "", fmt.Errorf("%s is %s, not made by supervise: refused and left as it is (remove it, or log elsewhere)", filepath.Join(dirPath, name), what)
		}
	}
	// Nothing there, or a file of ours: in a sealed directory openLog
	// finds nothing to remove.
	f, removed, err = openLog(dir, name, perm, owner, user)
	return f, false, removed, err
}

// openThrough opens what the root-owned symlink name in dir leads to: a
// console path is supervise's own stdout or stderr (a duplicate of it,
// never reopened by name), anything else is opened anew in its own
// directory under openIn's rules.
func openThrough(dir int, dirPath, name string, owner, user *Ident, links int) (*os.File, error) {
	if links > maxSymlinks {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dirPath, name), unix.ELOOP)
	}
	target, err := readRootLink(dir, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dirPath, name), err)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(dirPath, target)
	}
	target = filepath.Clean(target)
	if fd := consolepath.FD(target); fd != 0 {
		nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("%s leads to supervise's own %s: %w", filepath.Join(dirPath, name), target, err)
		}
		return os.NewFile(uintptr(nfd), target), nil
	}
	tdirPath := filepath.Dir(target)
	tdir, err := openDir(tdirPath)
	if err != nil {
		return nil, err
	}
	defer unix.Close(tdir)
	f, _, _, err := openIn(tdir, tdirPath, filepath.Base(target), dirPerm(tdir), owner, user, links)
	return f, err
}

// foreignStat is foreign for a name not opened: what it is when it is not
// a regular file with one link owned by root, the owner or the user.
func foreignStat(st *unix.Stat_t, owner, user *Ident) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	case unix.S_IFDIR:
		return "a directory"
	default:
		return "not a regular file"
	}
	uid := int(st.Uid)
	switch {
	case st.Nlink != 1:
		return "a file with several hard links"
	case !privileged(uid) && (owner == nil || uid != owner.UID) && (user == nil || uid != user.UID):
		return fmt.Sprintf("a file of uid %d", uid)
	}
	return ""
}

// maxSize is the size past which the file rotates: never when the lines
// go through a symlink.
func (f *File) maxSize() int64 {
	if f.through {
		return 0
	}
	return f.cfg.MaxSize
}
