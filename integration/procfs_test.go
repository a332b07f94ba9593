package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// What the tests read of other processes in /proc.

// pidStat is what /proc/PID/stat says of a process: its state letter (0
// when there is no such process), its command name and its parent.
type pidStat struct {
	state byte
	comm  string
	ppid  int
}

func readProcStat(pid int) pidStat {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return pidStat{}
	}
	s := string(b)
	// The name may hold spaces and parentheses: it ends at the last ')'.
	i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if i < 0 || j < i || j+2 >= len(s) {
		return pidStat{}
	}
	st := pidStat{state: s[j+2], comm: s[i+1 : j]}
	if f := strings.Fields(s[j+2:]); len(f) > 1 {
		st.ppid, _ = strconv.Atoi(f[1])
	}
	return st
}

// procState is the state letter and command name of a pid.
func procState(pid int) (state byte, comm string) {
	st := readProcStat(pid)
	return st.state, st.comm
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st := readProcStat(pid).state
	return st != 0 && st != 'Z'
}

// isZombie reports whether pid has exited and waits to be reaped.
func isZombie(pid int) bool { return readProcStat(pid).state == 'Z' }

// parentPid reads pid's parent from /proc.
func parentPid(t *testing.T, pid int) int {
	t.Helper()
	st := readProcStat(pid)
	if st.state == 0 {
		t.Fatalf("/proc/%d/stat: no such process", pid)
	}
	return st.ppid
}

// zombiesOf lists the zombie children of pid.
func zombiesOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st := readProcStat(n); st.state == 'Z' && st.ppid == pid {
			out = append(out, n)
		}
	}
	return out
}

// childPids lists the children of pid (every thread's).
func childPids(pid int) []int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		if err != nil {
			continue
		}
		for f := range strings.FieldsSeq(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// descendantsOf lists pid's children, theirs, and so on.
func descendantsOf(pid int) []int {
	var out []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		kids := childPids(queue[0])
		out = append(out, kids...)
		queue = append(queue, kids...)
	}
	return out
}
