// Package cgroups creates, limits, watches, kills and removes the cgroups of
// supervise's sandboxes, on cgroup v2 and v1, by hand on cgroupfs.
//
// # Layout
//
// Open finds the hierarchies under Options.FSRoot (default /sys/fs/cgroup):
//
//   - v2: FSRoot is a cgroup2 mount (it has cgroup.controllers).
//   - v1: FSRoot holds v1 hierarchies named after their controllers
//     (memory, cpu, cpuacct, pids, freezer; co-mounts such as "cpu,cpuacct"
//     are one hierarchy). A hybrid host, whose FSRoot/unified is a cgroup2
//     mount without controllers, counts as v1: only the v1 hierarchies can
//     limit anything there.
//   - none: neither. Create fails with ErrUnavailable; a caller that needs no
//     limit runs without a cgroup.
//
// Our subtree is Options.Path in every hierarchy, by default
// "<own cgroup>/supervise" where the own cgroup is read per hierarchy from
// /proc/self/cgroup (on v1 it differs between controllers). Each sandbox is a
// child of it, created with its limits written before any process is in it.
// On v1 a sandbox's cgroup is made only in the hierarchies it uses: those of
// memory, cpu, cpuacct and freezer always (the figures a status shows, OOM
// kills, the program's own CPU share, Kill), pids only with a pids limit
// (its task count is then read from the tasks file). Each hierarchy costs
// every start a mkdir and a cgroup.procs write under the kernel's global
// cgroup lock.
// Root.Close removes the directories Open created and nothing else, with one
// exception: the default subtree "<own>/supervise" is shared by every
// supervisor started in the same cgroup, and whichever of them leaves last
// removes it, whoever created it. A supervisor that leaves while another's
// cgroups are in the subtree leaves it; one that finds it gone at its next
// Create (another left while it was empty) makes it again.
//
// On a v2 host where the supervisor runs in a non-root cgroup (a systemd
// service with Delegate=yes), that cgroup holds a process, the supervisor, so
// the kernel refuses to enable controllers for its children (the "no internal
// processes" rule: EBUSY). Open therefore moves the supervisor into the leaf
// "<own>/supervisor" first, then enables cpu, memory and pids top-down in the
// cgroups it manages. The sandboxes are siblings of the leaf's subtree:
//
//	<own>/                    cgroup.subtree_control: cpu memory pids
//	<own>/supervisor          the supervisor (and nothing else)
//	<own>/supervise/<name>    one per sandbox
//
// # Placement: a process is in its cgroup before it runs a single instruction
// of the program
//
// Writing a pid into cgroup.procs after the program started is too late: in
// measurements on the CI machine, 4-12 % of the grandchildren a program forks
// at once escaped, and memory touched before the move stayed charged to the
// old cgroup (a hog touching 64 MiB was not killed by a 32 MiB limit). So
// the proc package places processes in one of two ways, both race-free:
//
//   - v2: clone into the cgroup. Cgroup.OpenFD gives an O_PATH directory fd
//     for syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}; clone3 with
//     CLONE_INTO_CGROUP creates the child inside the cgroup, so there is no
//     window at all. clone3 fails with EBADF on a v1 directory and with
//     ENOSYS where a seccomp filter blocks it (Docker's default profile on
//     older engines); Go has no fallback, so proc catches both and places
//     the child as on v1.
//   - v1 (and the v2 fallback): a stopped child. proc forks the program
//     under ptrace (PTRACE_TRACEME), so it stops at its exec before the
//     program's first instruction; the parent calls Cgroup.AddProc(pid),
//     which writes the pid into cgroup.procs of each of the cgroup's
//     hierarchies, and only then lets it go. Where ptrace is refused (a
//     seccomp or LSM policy), proc starts supervise itself re-executed as
//     a small stub that blocks reading a sync pipe until it has been placed,
//     then execs the program (or, with a pid namespace, forks it as its
//     PID 1). Either way everything the program does, every fork and every
//     page, happens inside the cgroup. The stub's own Go threads count
//     against pids.max until the exec, so proc runs it with GOMAXPROCS=1
//     and small pids limits must leave room for them.
//
// AddProc also works on v2, for the fallback.
//
// # Kill and delete
//
// Cgroup.Kill leaves nothing alive in the group, daemonized and setsid'ed
// descendants included, and returns once cgroup.procs is empty: v2 writes
// cgroup.kill (Linux 5.14+; atomic against forks), else freezes the group,
// SIGKILLs every member and thaws it; v1 does the same through the freezer
// hierarchy when mounted, else sends SIGKILL rounds until the group stays
// empty. Individual signals go through a pidfd after checking
// /proc/<pid>/cgroup, so a reused pid is never hit. Cgroup.Delete kills, then
// removes the directory from every hierarchy, retrying on EBUSY. Both are
// bounded by Options.KillTimeout.
//
// # Counters
//
// Cgroup.Stats reads memory in use, CPU time, tasks (pids.current counts
// threads and unreaped zombies; a v1 cgroup without a pids limit counts the
// lines of its tasks file, without the zombies) and OOM kills. Cgroup.OOMKills is what proc
// reads to tell an OOMKilled exit from another SIGKILL: v2 memory.events
// oom_kill, v1 memory.oom_control oom_kill.
//
// A memory limit also sets the swap limit (v2 memory.swap.max 0, v1
// memory.memsw.limit_in_bytes = the limit) where swap accounting exists, so
// a limited program is OOM-killed instead of swapping.
package cgroups
