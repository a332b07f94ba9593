// Package listenenv writes and reads the environment of socket activation,
// sd_listen_fds(3)'s LISTEN_FDS, LISTEN_PID and LISTEN_FDNAMES. It links no
// net: supervise-init and the exec stub, which pay for every package they
// link at each start, use it without the socket code.
package listenenv

import (
	"fmt"
	"strconv"
	"strings"
)

// FirstFD is the descriptor of the first passed socket (sd_listen_fds's
// SD_LISTEN_FDS_START): the rest follow in order.
const FirstFD = 3

// Env is the environment of n = len(names) passed sockets: LISTEN_FDS and
// LISTEN_FDNAMES. LISTEN_PID must name the program's own pid, which only
// the process that execs it knows: WithPID, after the fork.
func Env(names []string) []string {
	return []string{
		"LISTEN_FDS=" + strconv.Itoa(len(names)),
		"LISTEN_FDNAMES=" + strings.Join(names, ":"),
	}
}

// WithPID returns env with LISTEN_PID (every copy) replaced by pid.
func WithPID(env []string, pid int) []string {
	return append(WithoutVar(env, "LISTEN_PID"), "LISTEN_PID="+strconv.Itoa(pid))
}

// WithoutVar returns env without any name=… entry.
func WithoutVar(env []string, name string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// Count reads socket activation from env as sd_listen_fds(3) does: the
// number in LISTEN_FDS when LISTEN_PID is pid (the variables are for that
// process only, not its children), else 0.
func Count(env []string, pid int) (int, error) {
	var fds, owner string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "LISTEN_FDS="); ok {
			fds = v
		} else if v, ok := strings.CutPrefix(kv, "LISTEN_PID="); ok {
			owner = v
		}
	}
	if fds == "" || owner != strconv.Itoa(pid) {
		return 0, nil
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n < 0 || n > 1021 {
		return 0, fmt.Errorf("LISTEN_FDS=%q: want a count of descriptors", fds)
	}
	return n, nil
}
