package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSharedParentCgroupGoesWithTheLastSupervisor: two supervisors started
// in the same cgroup share its "supervise" subtree. Whichever exits first
// finds the other's cgroups in it and leaves it; the last one to exit
// removes it, although it did not create it.
func TestSharedParentCgroupGoesWithTheLastSupervisor(t *testing.T) {
	needRoot(t)
	for _, creatorFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("creator exits first %v", creatorFirst), func(t *testing.T) {
			cgs := testCgroups(t)
			config := "[program.app]\ncommand = [\"sleep\", \"100000\"]\nsandbox = { pids_max = 16 }\n"
			dirA, fileA := writeConfig(t, config)
			a := startInCgroups(t, dirA, fileA, cgs)
			a.running("app")
			dirB, fileB := writeConfig(t, config)
			b := startInCgroups(t, dirB, fileB, cgs)
			b.running("app")
			for _, cg := range cgs {
				ents, _ := os.ReadDir(filepath.Join(cg, "supervise"))
				if len(ents) < 2 {
					t.Fatalf("%s/supervise does not hold both supervisors' cgroups: %v", cg, ents)
				}
			}
			first, last := a, b
			if !creatorFirst {
				first, last = b, a
			}
			first.signal(syscall.SIGTERM)
			first.wait(60 * time.Second)
			for _, cg := range cgs {
				if _, err := os.Stat(filepath.Join(cg, "supervise")); err != nil {
					t.Fatalf("the first supervisor to exit removed the subtree the other still uses: %v", err)
				}
			}
			last.signal(syscall.SIGTERM)
			last.wait(60 * time.Second)
			for _, cg := range cgs {
				if _, err := os.Stat(filepath.Join(cg, "supervise")); !os.IsNotExist(err) {
					ents, _ := os.ReadDir(filepath.Join(cg, "supervise"))
					t.Errorf("%s/supervise left behind by the last supervisor (holding %d entries): %v", cg, len(ents), err)
				}
			}
		})
	}
}

// testCgroups makes a cgroup below the test's own in every hierarchy
// supervise uses (the v1 controllers', or the unified one) and removes it,
// with whatever a failed test left in it, at the end.
func testCgroups(t *testing.T) []string {
	t.Helper()
	own := map[string]string{} // controller ("" for v2) → own cgroup
	f, err := os.Open("/proc/self/cgroup")
	must(t, err)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) == 3 {
			for _, c := range strings.Split(parts[1], ",") {
				own[c] = parts[2]
			}
		}
	}
	f.Close()
	name := fmt.Sprintf("sharetest-%d-%d", os.Getpid(), time.Now().UnixNano())
	var dirs []string
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		dirs = []string{filepath.Join("/sys/fs/cgroup", own[""], name)}
	} else {
		seen := map[string]bool{}
		for _, c := range []string{"memory", "cpu", "cpuacct", "pids", "freezer"} {
			mount, err := filepath.EvalSymlinks(filepath.Join("/sys/fs/cgroup", c))
			if err != nil || seen[mount] {
				continue
			}
			seen[mount] = true
			dirs = append(dirs, filepath.Join(mount, own[c], name))
		}
	}
	if len(dirs) == 0 {
		t.Skip("no cgroup hierarchy here")
	}
	for _, d := range dirs {
		must(t, os.Mkdir(d, 0o755))
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			sub, _ := filepath.Glob(filepath.Join(d, "supervise", "*"))
			for _, s := range sub {
				if fi, err := os.Stat(s); err == nil && fi.IsDir() {
					_ = os.Remove(s)
				}
			}
			for _, s := range []string{filepath.Join(d, "supervise"), filepath.Join(d, "supervisor"), d} {
				if err := os.Remove(s); err != nil && !os.IsNotExist(err) {
					t.Logf("removing test cgroup %s: %v", s, err)
				}
			}
		}
	})
	return dirs
}

// startInCgroups starts supervise as startDaemon does, from a shell that
// first moves itself into the cgroups dirs.
func startInCgroups(t *testing.T, dir, file string, dirs []string) *daemon {
	t.Helper()
	d := newDaemon(t, dir)
	script := `for d in $CGROUP_DIRS; do echo $$ > "$d/cgroup.procs" || exit 97; done; exec "$@"`
	cmd := exec.Command("sh", "-c", script, "sh", binary, "run", "-c", file, "--socket", d.socket)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGROUP_DIRS="+strings.Join(dirs, " "))
	d.launch(cmd)
	return d
}
