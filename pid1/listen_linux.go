package pid1

import (
	"fmt"
	"os"
	"syscall"

	"github.com/supervise-dev/supervise/internal/listenenv"
)

// listenShimArgv0 marks this binary re-executed as the socket-activation
// shim: argv is [listenShimArgv0, PATH, ARGV0, ARGS…]. An argv marker
// cannot leak into the command the way an environment variable could.
const listenShimArgv0 = "supervise-listen-pid"

// IsListenShim reports whether this process is the socket-activation shim.
// main must check it first and exit with ListenShimMain:
//
//	if pid1.IsListenShim() { os.Exit(pid1.ListenShimMain()) }
func IsListenShim() bool {
	return len(os.Args) > 2 && os.Args[0] == listenShimArgv0
}

// ListenShimMain sets LISTEN_PID to its own pid, which the exec below
// keeps, and execs the command in place. It returns only when that
// exec failed, with the code an init reports for it.
func ListenShimMain() int {
	env := listenenv.WithPID(os.Environ(), os.Getpid())
	err := syscall.Exec(os.Args[1], os.Args[2:], env)
	fmt.Fprintf(os.Stderr, "supervise: exec %q: %v\n", os.Args[2], err)
	if notFound(err) {
		return 127
	}
	return 126
}

// ListenFDs reads systemd's socket activation from env: the number of
// descriptors in LISTEN_FDS when LISTEN_PID is pid (sd_listen_fds's rule:
// the variables are for that process only), else 0.
func ListenFDs(env []string, pid int) (int, error) { return listenenv.Count(env, pid) }
