package notify

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strconv"
)

// FromProgram reports whether pid, the sender of a message as the kernel
// vouches for it, is one of a program's processes: listed in cgroupDir's
// cgroup.procs (the program's sandbox cgroup; "" when it has none), or a
// descendant of (or one of) roots (its main process, its sandbox init).
// Anything else that can reach the socket (another process of the same
// user, a process the program handed the path to) is not the program.
func FromProgram(pid int, cgroupDir string, roots ...int) bool {
	if pid <= 0 {
		return false
	}
	if cgroupDir != "" && inCgroup(pid, cgroupDir) {
		return true
	}
	// Up the parent chain; bounded, since a chain can change under us.
	for p, i := pid, 0; p > 1 && i < 256; i++ {
		for _, r := range roots {
			if r > 0 && p == r {
				return true
			}
		}
		p = parent(p)
	}
	return false
}

// maxProcsFile bounds what is read of a cgroup.procs file.
const maxProcsFile = 4 << 20

func inCgroup(pid int, dir string) bool {
	f, err := os.Open(dir + "/cgroup.procs")
	if err != nil {
		return false
	}
	defer f.Close()
	want := []byte(strconv.Itoa(pid))
	sc := bufio.NewScanner(io.LimitReader(f, maxProcsFile))
	for sc.Scan() {
		if bytes.Equal(bytes.TrimSpace(sc.Bytes()), want) {
			return true
		}
	}
	return false
}

// parent returns pid's parent from /proc/PID/stat, 0 when unknown.
func parent(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// "pid (comm) state ppid …": comm may hold spaces and parentheses,
	// so parse from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	return ppid
}
