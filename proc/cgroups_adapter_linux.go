package proc

import (
	"fmt"

	"github.com/supervise-dev/supervise/proc/cgroups"
)

// openCgroups opens our cgroup subtree; an error means cgroups are not
// usable here.
func openCgroups(fsRoot, path, mode string) (cgroupRoot, error) {
	m := cgroups.ModeDetect
	switch mode {
	case "":
	case "v1":
		m = cgroups.ModeV1
	case "v2":
		m = cgroups.ModeV2
	case "none":
		m = cgroups.ModeNone
	default:
		return nil, fmt.Errorf("unknown cgroup mode %q (want v1, v2 or none)", mode)
	}
	root, err := cgroups.Open(cgroups.Options{FSRoot: fsRoot, Path: path, Mode: m})
	if err != nil {
		return nil, err
	}
	if root.Mode() == cgroups.ModeNone {
		root.Close()
		return nil, ErrCgroupsUnavailable
	}
	return cgRoot{root}, nil
}

type cgRoot struct{ r *cgroups.Root }

func (c cgRoot) v2() bool     { return c.r.Mode() == cgroups.ModeV2 }
func (c cgRoot) close() error { return c.r.Close() }

func (c cgRoot) create(name string, cfg SandboxConfig) (cgroup, error) {
	cg, err := c.r.Create(name, cgroups.Resources{MemoryMax: cfg.MemoryMax, CPUMax: cfg.CPUMax, PidsMax: cfg.PidsMax})
	if err != nil {
		return nil, err
	}
	return cgGroup{cg}, nil
}

func (c cgRoot) children() ([]string, error) { return c.r.Children() }

func (c cgRoot) existing(name string) (cgroup, error) {
	cg, err := c.r.Existing(name)
	if err != nil {
		return nil, err
	}
	return cgGroup{cg}, nil
}

type cgGroup struct{ c *cgroups.Cgroup }

func (g cgGroup) path() string               { return g.c.Path() }
func (g cgGroup) openFD() (int, error)       { return g.c.OpenFD() }
func (g cgGroup) addProc(pid int) error      { return g.c.AddProc(pid) }
func (g cgGroup) procs() ([]int, error)      { return g.c.Procs() }
func (g cgGroup) kill() error                { return g.c.Kill() }
func (g cgGroup) remove() error              { return g.c.Delete() }
func (g cgGroup) removeEmpty() (bool, error) { return g.c.DeleteEmpty() }
func (g cgGroup) oomKills() (uint64, error)  { return g.c.OOMKills() }

func (g cgGroup) usage() (Stats, error) {
	s, err := g.c.Usage()
	if err != nil {
		return Stats{}, err
	}
	return Stats{MemoryBytes: s.MemoryBytes, CPUUsage: s.CPUUsage}, nil
}

func (g cgGroup) stats() (Stats, error) {
	s, err := g.c.Stats()
	if err != nil {
		return Stats{}, err
	}
	return Stats{MemoryBytes: s.MemoryBytes, MemoryPeak: s.MemoryPeak, CPUUsage: s.CPUUsage, Pids: s.Pids, OOMKills: s.OOMKills}, nil
}
