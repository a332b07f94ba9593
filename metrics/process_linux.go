package metrics

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// The kernel reports times in /proc in USER_HZ, 100 on every Linux
// architecture Go supports.
const userHZ = 100

// appendProcess writes the supervisor's own process figures under the
// names of the process collector Prometheus users know. A figure that
// cannot be read is left out.
func appendProcess(e *encoder) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return
	}
	// The fields after the command (which may hold spaces and ')'),
	// numbered as in proc(5) from 3 (state).
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return
	}
	f := bytes.Fields(stat[i+1:])
	field := func(n int) float64 {
		if n-3 >= len(f) {
			return 0
		}
		v, _ := strconv.ParseFloat(string(f[n-3]), 64)
		return v
	}
	e.family("process_cpu_seconds_total", "counter", "User and system CPU time the supervisor spent, in seconds.")
	e.sample("process_cpu_seconds_total", (field(14)+field(15))/userHZ)
	e.family("process_resident_memory_bytes", "gauge", "Resident memory of the supervisor, in bytes.")
	e.sample("process_resident_memory_bytes", field(24)*float64(os.Getpagesize()))
	e.family("process_virtual_memory_bytes", "gauge", "Virtual memory of the supervisor, in bytes.")
	e.sample("process_virtual_memory_bytes", field(23))
	if boot := bootTime(); boot > 0 {
		e.family("process_start_time_seconds", "gauge", "Start of the supervisor, in seconds since the Unix epoch.")
		e.sample("process_start_time_seconds", boot+field(22)/userHZ)
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		e.family("process_open_fds", "gauge", "Open file descriptors of the supervisor.")
		e.sample("process_open_fds", float64(len(ents)-1)) // less the one reading the directory
	}
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		e.family("process_max_fds", "gauge", "The supervisor's soft limit of open file descriptors.")
		e.sample("process_max_fds", float64(lim.Cur))
	}
}

// bootTime is the btime line of /proc/stat: the boot, in seconds since the
// epoch; 0 when unknown.
func bootTime() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			t, _ := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
			return t
		}
	}
	return 0
}
