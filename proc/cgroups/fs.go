//go:build linux

package cgroups

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// kernel is every change this package makes to cgroupfs. Reads go straight
// to the files; changes go through here so that unit tests can swap in a fake
// that behaves like cgroupfs (mkdir populates interface files, writes to a
// missing file fail with ENOENT, rmdir of a busy group fails with EBUSY) on a
// plain temporary directory.
type kernel interface {
	Mkdir(path string) error
	Rmdir(path string) error
	// Write replaces the contents of an existing interface file with data in
	// one write(2), which is how cgroupfs takes a value.
	Write(path, data string) error
}

type realKernel struct{}

func (realKernel) Mkdir(path string) error { return os.Mkdir(path, 0o755) }

func (realKernel) Rmdir(path string) error {
	// unix.Rmdir rather than os.Remove: os.Remove tries unlink first and may
	// report its error instead of the EBUSY we retry on.
	if err := unix.Rmdir(path); err != nil {
		return &fs.PathError{Op: "rmdir", Path: path, Err: err}
	}
	return nil
}

// Write writes data to a cgroup interface file in one write(2), as the
// kernel takes such a value. Plain system calls rather than an os.File
// (whose open adds a poller registration attempt) and no O_TRUNC (cgroupfs
// ignores it, after a trip through the truncate path): every start writes
// its pid to a cgroup.procs this way once per hierarchy.
func (realKernel) Write(path, data string) error {
	// No O_CREATE: cgroupfs cannot create files, and a missing file means a
	// missing controller, which the caller reports as such.
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	n, werr := unix.Write(fd, []byte(data))
	for werr == unix.EINTR {
		n, werr = unix.Write(fd, []byte(data))
	}
	cerr := unix.Close(fd)
	switch {
	case werr != nil:
		return &fs.PathError{Op: "write", Path: path, Err: werr}
	case n != len(data):
		return &fs.PathError{Op: "write", Path: path, Err: io.ErrShortWrite}
	case cerr != nil:
		return &fs.PathError{Op: "close", Path: path, Err: cerr}
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func readString(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// readInt reads a file holding one integer ("max" reads as -1). Status
// and metrics read two of these per program per second: plain system
// calls into a stack buffer, without the os.File's poller registration
// and fstat, take half the calls of os.ReadFile.
func readInt(path string) (int64, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var buf [64]byte
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil {
		return 0, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if n == len(buf) {
		return 0, fmt.Errorf("parsing %s: longer than an integer", path)
	}
	s := string(bytes.TrimSpace(buf[:max(n, 0)]))
	if s == "max" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing %s: %w", path, err)
	}
	return v, nil
}

// readKeyed reads a flat keyed file ("key value" per line, as memory.events,
// cpu.stat and memory.oom_control are) and returns the value of key.
// found is false when the file has no such key.
func readKeyed(path, key string) (v uint64, found bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok || k != key {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("parsing %s: %s: %w", path, key, err)
		}
		return n, true, nil
	}
	return 0, false, nil
}

// readProcs returns the pids listed in a cgroup.procs file. Zombies are not
// listed there: a process leaves cgroup.procs when it exits, before it is
// reaped.
func readProcs(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", path, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// readWords reads a space-separated list such as cgroup.controllers.
func readWords(path string) ([]string, error) {
	s, err := readString(path)
	if err != nil {
		return nil, err
	}
	return strings.Fields(s), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ownCgroups parses /proc/<pid>/cgroup ("id:controllers:path" per line) into
// controller → path. The v2 (unified) entry is under the key "". Named v1
// hierarchies keep their "name=" form.
func ownCgroups(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseProcCgroup(b)
}

func parseProcCgroup(b []byte) (map[string]string, error) {
	m := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("malformed line %q", line)
		}
		if parts[1] == "" {
			m[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			m[c] = parts[2]
		}
	}
	return m, sc.Err()
}

// under reports whether p is a strict descendant of dir; both are
// slash-separated paths inside one hierarchy.
func under(dir, p string) bool {
	dir, p = cleanRel(dir), cleanRel(p)
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

// cleanRel cleans a path inside a hierarchy to an absolute slash form.
func cleanRel(p string) string {
	return filepath.Clean("/" + p)
}

func sortedUnique(pids []int) []int {
	sort.Ints(pids)
	out := pids[:0]
	for i, p := range pids {
		if i == 0 || p != pids[i-1] {
			out = append(out, p)
		}
	}
	return out
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
