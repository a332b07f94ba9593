package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/supervise-dev/supervise/internal/execpath"
	"github.com/supervise-dev/supervise/internal/listenenv"
	"golang.org/x/sys/unix"
)

// spawnSpec is a fully resolved command. The runtime forks it directly or
// sends it to a sandbox init, which forks it inside the namespaces; it
// crosses the control socket as JSON.
type spawnSpec struct {
	Path       string       `json:"path"`
	Args       []string     `json:"args"`
	Env        []string     `json:"env,omitempty"`
	Dir        string       `json:"dir,omitempty"`
	Cred       bool         `json:"cred,omitempty"`
	UID        uint32       `json:"uid,omitempty"`
	GID        uint32       `json:"gid,omitempty"`
	Groups     []uint32     `json:"groups,omitempty"`
	Rlimits    []rlimitSpec `json:"rlimits,omitempty"`
	NoNewPrivs bool         `json:"nnp,omitempty"`
	Umask      int          `json:"umask"` // -1 inherits
	// InitPath is the stub binary for needsShim specs.
	InitPath string `json:"init,omitempty"`
	// ExtraFDs are the descriptor numbers the program gets its extra files
	// at, in the order the files are passed next to stdout and stderr.
	ExtraFDs []int `json:"extra_fds,omitempty"`
	// ListenPID: the stub sets LISTEN_PID to its own pid, which the exec
	// in place makes the program's.
	ListenPID bool `json:"listen_pid,omitempty"`
	// ForceShim starts even a plain program through the stub: it blocks
	// until it got its spec, so it can be placed in a cgroup first.
	ForceShim bool `json:"-"`
}

type rlimitSpec struct {
	Resource int    `json:"r"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

// needsShim: rlimits, a umask, no_new_privs and LISTEN_PID (the child's
// own pid) cannot be set through SysProcAttr, so such programs are started through the re-executed stub
// ("exec" role), which sets them and execs the program in place.
func (s *spawnSpec) needsShim() bool {
	return s.ForceShim || s.ListenPID || len(s.Rlimits) > 0 || s.NoNewPrivs || s.Umask >= 0
}

// rlimitResource is the RLIMIT_ constant of a lower-case resource name
// ("nofile"); ok is false for an unknown one. A switch, not a map built
// at every start of every binary that links proc.
func rlimitResource(name string) (res int, ok bool) {
	switch name {
	case "as":
		return unix.RLIMIT_AS, true
	case "core":
		return unix.RLIMIT_CORE, true
	case "cpu":
		return unix.RLIMIT_CPU, true
	case "data":
		return unix.RLIMIT_DATA, true
	case "fsize":
		return unix.RLIMIT_FSIZE, true
	case "locks":
		return unix.RLIMIT_LOCKS, true
	case "memlock":
		return unix.RLIMIT_MEMLOCK, true
	case "msgqueue":
		return unix.RLIMIT_MSGQUEUE, true
	case "nice":
		return unix.RLIMIT_NICE, true
	case "nofile":
		return unix.RLIMIT_NOFILE, true
	case "nproc":
		return unix.RLIMIT_NPROC, true
	case "rss":
		return unix.RLIMIT_RSS, true
	case "rtprio":
		return unix.RLIMIT_RTPRIO, true
	case "rttime":
		return unix.RLIMIT_RTTIME, true
	case "sigpending":
		return unix.RLIMIT_SIGPENDING, true
	case "stack":
		return unix.RLIMIT_STACK, true
	}
	return 0, false
}

func resolveRlimits(rls []Rlimit) ([]rlimitSpec, error) {
	var out []rlimitSpec
	for _, rl := range rls {
		name := strings.TrimPrefix(strings.ToLower(rl.Name), "rlimit_")
		res, ok := rlimitResource(name)
		if !ok {
			return nil, fmt.Errorf("rlimit %q: unknown resource", rl.Name)
		}
		if rl.Soft > rl.Hard {
			return nil, fmt.Errorf("rlimit %q: soft limit %d above hard limit %d", rl.Name, rl.Soft, rl.Hard)
		}
		out = append(out, rlimitSpec{Resource: res, Cur: rl.Soft, Max: rl.Hard})
	}
	return out, nil
}

const defaultPath = execpath.DefaultPath

// checkWorkDir says that the working directory is missing, rather than
// letting chdir's ENOENT come back from the exec as if the command were.
func checkWorkDir(dir string) error {
	if dir == "" {
		return nil
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("working directory %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("working directory: %w", err)
	case !st.IsDir():
		return fmt.Errorf("working directory %s is not a directory", dir)
	}
	return nil
}

// startedFunc finishes a start outside the reaper's lock: for the stub it
// hands over the spec and waits until the program was exec'd.
type startedFunc func() error

// childFiles lays out the child's descriptor table: stdin (/dev/null),
// stdout, stderr, then extra[i] at s.ExtraFDs[i]; holes are closed (-1).
func childFiles(s *spawnSpec, null, stdout, stderr int, extra []int) ([]uintptr, error) {
	if len(extra) != len(s.ExtraFDs) {
		return nil, fmt.Errorf("%d extra files for %d descriptor numbers", len(extra), len(s.ExtraFDs))
	}
	n := 3
	for _, fd := range s.ExtraFDs {
		if fd < 3 || fd > 1024 {
			return nil, fmt.Errorf("extra file at descriptor %d: want 3 to 1024", fd)
		}
		n = max(n, fd+1)
	}
	files := make([]uintptr, n)
	for i := range files {
		files[i] = ^uintptr(0) // closed in the child
	}
	files[0], files[1], files[2] = uintptr(null), uintptr(stdout), uintptr(stderr)
	for i, fd := range s.ExtraFDs {
		files[fd] = uintptr(extra[i])
	}
	return files, nil
}

// forkExecFunc forks and execs as syscall.ForkExec does: that, or the
// spawner's forkExec.
type forkExecFunc func(path string, argv []string, attr *syscall.ProcAttr) (int, error)

// forkSpec forks s with stdio files (stdin is /dev/null), the extra files
// of s.ExtraFDs, and the placement in sys (cgroup fd, ptrace), through
// forkExec. The child gets its own process group. It must run inside
// reaper.spawn; the returned function must be called after the pid was
// registered.
func forkSpec(s *spawnSpec, stdout, stderr int, extra []int, sys *syscall.SysProcAttr, forkExec forkExecFunc) (int, startedFunc, error) {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return 0, nil, err
	}
	defer null.Close()
	if stdout < 0 {
		stdout = int(null.Fd())
	}
	if stderr < 0 {
		stderr = int(null.Fd())
	}
	sys.Setpgid = true
	files, err := childFiles(s, int(null.Fd()), stdout, stderr, extra)
	if err != nil {
		return 0, nil, err
	}
	if !s.needsShim() {
		if s.Cred {
			sys.Credential = &syscall.Credential{Uid: s.UID, Gid: s.GID, Groups: s.Groups}
		}
		pid, err := forkExec(s.Path, s.Args, &syscall.ProcAttr{
			Dir:   s.Dir,
			Env:   s.Env,
			Files: files,
			Sys:   sys,
		})
		if err != nil {
			return 0, nil, fmt.Errorf("exec %q: %w", s.Args[0], err)
		}
		return pid, func() error { return nil }, nil
	}

	// The stub reads the spec from the descriptor after the program's
	// (its number is the stub's argument) and reports a failed exec on it;
	// a successful exec closes it (close-on-exec), which we see as EOF.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("socketpair: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "stub")
	theirs := os.NewFile(uintptr(fds[1]), "stub")
	defer theirs.Close()
	ctlFD := len(files)
	pid, err := forkExec(s.InitPath, []string{initArgv0, roleExec, strconv.Itoa(ctlFD)}, &syscall.ProcAttr{
		Env:   []string{"GOMAXPROCS=1"},
		Files: append(files, theirs.Fd()),
		Sys:   sys,
	})
	if err != nil {
		ours.Close()
		return 0, nil, fmt.Errorf("exec stub %q: %w", s.InitPath, err)
	}
	finish := func() error {
		defer ours.Close()
		if err := json.NewEncoder(ours).Encode(s); err != nil {
			return fmt.Errorf("sending the spec to the stub: %w", err)
		}
		if err := unix.Shutdown(int(ours.Fd()), unix.SHUT_WR); err != nil {
			return fmt.Errorf("sending the spec to the stub: %w", err)
		}
		msg, err := io.ReadAll(ours)
		if err != nil {
			return fmt.Errorf("waiting for the stub: %w", err)
		}
		if len(msg) > 0 {
			return errors.New(strings.TrimSpace(string(msg)))
		}
		return nil
	}
	return pid, finish, nil
}

// shimMain is the "exec" role: apply what SysProcAttr cannot, then exec
// the program in place (same pid, so the parent's wait sees the program).
func shimMain() int {
	fd := 3
	if len(os.Args) > 2 {
		if n, err := strconv.Atoi(os.Args[2]); err == nil && n > 2 {
			fd = n
		}
	}
	ctl := os.NewFile(uintptr(fd), "ctl")
	var s spawnSpec
	if err := json.NewDecoder(ctl).Decode(&s); err != nil {
		fmt.Fprintf(ctl, "stub: reading spec: %v\n", err)
		return 127
	}
	if err := shimApply(&s); err != nil {
		fmt.Fprintln(ctl, err)
		return 127
	}
	if s.ListenPID {
		s.Env = listenenv.WithPID(s.Env, os.Getpid())
	}
	unix.CloseOnExec(fd)
	err := syscall.Exec(s.Path, s.Args, s.Env)
	fmt.Fprintf(ctl, "exec %q: %v\n", s.Args[0], err)
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}

// shimApply runs on the locked main thread: no_new_privs is per thread
// and the exec must come from the thread that set it.
func shimApply(s *spawnSpec) error {
	for _, rl := range s.Rlimits {
		lim := unix.Rlimit{Cur: rl.Cur, Max: rl.Max}
		if err := unix.Prlimit(0, rl.Resource, &lim, nil); err != nil {
			return fmt.Errorf("setting rlimit %d: %w", rl.Resource, err)
		}
	}
	if s.Umask >= 0 {
		unix.Umask(s.Umask)
	}
	if s.Cred {
		// The syscall package versions change every thread of the stub.
		if err := syscall.Setgroups(toInts(s.Groups)); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
		if err := syscall.Setresgid(int(s.GID), int(s.GID), int(s.GID)); err != nil {
			return fmt.Errorf("setgid %d: %w", s.GID, err)
		}
		if err := syscall.Setresuid(int(s.UID), int(s.UID), int(s.UID)); err != nil {
			return fmt.Errorf("setuid %d: %w", s.UID, err)
		}
	}
	if s.Dir != "" {
		if err := os.Chdir(s.Dir); err != nil {
			return fmt.Errorf("chdir: %w", err)
		}
	}
	if s.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
	}
	return nil
}

func toInts(u []uint32) []int {
	out := make([]int, len(u))
	for i, v := range u {
		out[i] = int(v)
	}
	return out
}
