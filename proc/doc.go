// Package proc is the sandbox runtime: the only package that forks,
// execs, signals, waits, and touches cgroups and namespaces. Its interface
// has the shape of the CRI: imperative, thread-safe, every call blocks
// until its transition happened or returns an error, and it never makes a
// transition on its own (the controller drives it).
//
//   - Sandboxes: CreateSandbox, DeleteSandbox, SandboxStatus, Stats. A
//     sandbox is a cgroup (proc/cgroups; v2 preferred, v1 supported, none
//     when unusable and no limit is asked) plus the namespaces asked for.
//     DeleteSandbox kills everything left in it (the cgroup, else the pid
//     namespace, else the process groups) and removes the cgroup.
//   - Processes: Create → Created, Start → Running, Stop → Exited, Remove.
//     Invalid transitions fail with ErrInvalidState. Every program runs in
//     its own process group; Signal and Stop address the group.
//   - Exits: Events delivers one ExitEvent per started process, never
//     dropped; Reason is Completed, Error, Signaled or OOMKilled (the
//     cgroup's OOM-kill counter grew during the run).
//   - Exec runs a short command inside a sandbox (same namespaces, cgroup,
//     identity); the hooks use it.
//
// How a child gets into its sandbox, race-free:
//
//   - No namespaces: the runtime forks the program itself. On cgroup v2 it
//     is cloned into its cgroup (clone3 CLONE_INTO_CGROUP). Where that
//     fails (v1: EBADF; clone3 filtered by seccomp: ENOSYS) the child is
//     forked with PTRACE_TRACEME: it stops right after execve, before the
//     program ran a single instruction, is written to cgroup.procs, and is
//     detached. That costs microseconds where a re-exec'd stub costs a Go
//     start-up.
//   - The spawner (spawner_linux.go): a fork copies the forking process's
//     descriptor table and the exec closes its close-on-exec entries one
//     by one, and the runtime holds two pipe ends per program, so a start
//     from the runtime costs the fleet's size. Once a start passed a
//     descriptor numbered above 4096 (Options.Spawner forces it on or
//     off), programs without namespaces are forked by the spawner: this
//     binary re-executed in the "spawner" role, started on first use,
//     holding fds 0-3 (the socket) and what the Go runtime opens. It gets
//     each request (the ForkExec arguments the runtime laid out) with the
//     program's descriptors (SCM_RIGHTS), forks with CLONE_PARENT, closes
//     them and answers the pid or the fork's errno. The program is the
//     runtime's child all the same: the request runs with the registry
//     locked as a direct fork does, and exits, signals and PID-1 reaping
//     are unchanged. It is placed under ptrace on v1 and v2 alike
//     (clone3 refuses CLONE_PARENT with an exit signal, which Go's clone3
//     always sets): the tracer is the spawner's parent, a thread the
//     runtime keeps locked for that, which does the detach. The spawner
//     itself never enters a program's cgroup, so pids.max, memory charge
//     and DeleteSandbox's kill never count or reach it (joining the
//     cgroup around the fork was the other way: pids.max would count the
//     spawner's three threads against the program's fork, and a kill or
//     a v1 freeze of the cgroup at that moment would take it along). If
//     it is found dead it is started again; a request it could not take
//     falls back to the direct fork with a log line; if it dies during a
//     request, a child it may have forked is stopped under ptrace (or is
//     the stub waiting for its spec) and never runs the program: the
//     reaper kills an unknown child in a ptrace stop, and the direct fork
//     starts the program. Only in a sandbox without a cgroup (no ptrace)
//     is such a start failed instead, rather than risk a second copy.
//   - Namespaces: the sandbox has a long-lived init, this binary
//     re-executed (IsInit/InitMain, dispatched first thing in main). It is
//     cloned into the namespaces (and, on v2, the cgroup), and blocks on its
//     control socket until the runtime has placed it in the cgroup and sent
//     its setup; then it makes / private, mounts a fresh /proc (pid+mount),
//     sets the hostname, brings lo up, becomes root of its user namespace.
//     It forks programs and Exec commands on request (they inherit its
//     namespaces and cgroup), forwards signals to their process groups,
//     reaps everything as PID 1 (or subreaper) and reports exits back over
//     a SOCK_SEQPACKET socketpair that also carries the stdio fds
//     (SCM_RIGHTS). When that socket closes (DeleteSandbox, or the runtime
//     died) the init kills every process it started and exits. Forking
//     from inside is what makes Exec robust: setns
//     from the multi-threaded runtime cannot enter a mount or user
//     namespace, and a pid namespace only applies to children.
//   - Rlimits, a umask and no_new_privs cannot be set through SysProcAttr:
//     such programs are started through the stub's "exec" role, which sets
//     them on its locked thread and execs the program in place.
//
// Reaping: one reaper goroutine per process owns wait4. It reaps on
// SIGCHLD with Wait4(-1, WNOHANG) and dispatches by pid through a registry;
// the registry lock is held across every fork and its registration, so no
// exit is collected before its pid is known, and a registered pid (not yet
// reaped) cannot have been reused, so signals sent under that lock never
// hit a stranger. Orphans re-parented to us (PID 1, or a subreaper) are
// reaped silently. Nothing else in the process may wait for children: no
// exec.Cmd.Wait or os.Process.Wait while a Runtime is open, and only one
// Runtime may be open at a time.
//
// The init is per sandbox, not per process (like the CRI's pod sandbox):
// the namespaces exist from CreateSandbox to DeleteSandbox, so a pre_start
// hook can Exec in them before the program starts and a post_stop hook
// after it exited, and a Start costs a fork from the init, not a Go
// start-up.
//
// RunInit and ExitLike are the init loop of the stub on their own (start
// one program, forward signals, reap, exit like it): the base of a tini
// replacement.
package proc
