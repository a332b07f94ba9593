package proc

// cgroupRoot and cgroup are what the runtime needs of proc/cgroups; the
// adapter in cgroups_adapter_linux.go implements them.
type cgroupRoot interface {
	v2() bool
	create(name string, res SandboxConfig) (cgroup, error)
	// children and existing find the cgroups a previous supervisor left.
	children() ([]string, error)
	existing(name string) (cgroup, error)
	close() error
}

type cgroup interface {
	path() string
	// openFD is for clone3 CLONE_INTO_CGROUP (v2 only); the caller closes it.
	openFD() (int, error)
	addProc(pid int) error
	procs() ([]int, error)
	// kill SIGKILLs every process in the cgroup (cgroup.kill on v2,
	// freeze, kill, thaw on v1).
	kill() error
	remove() error
	// removeEmpty removes the cgroup only if the kernel finds it empty,
	// whatever this pid namespace can see of it; false when populated.
	removeEmpty() (bool, error)
	stats() (Stats, error)
	usage() (Stats, error) // memory and CPU only
	oomKills() (uint64, error)
}
