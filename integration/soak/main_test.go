// Package soak is the chaos soak of the supervise binary: 200 programs
// (crashing, forking daemons, writing logs hard, sleeping; some with cgroup
// limits and namespaces) under a driver that, for the whole run, SIGKILLs
// and signals them, starts, stops and restarts them through supervisectl and
// rewrites and reloads the config. At the end it checks what must hold after
// any amount of abuse: the programs that should run run, no zombie, no
// leaked process, fd, thread or cgroup, bounded RSS, no lost log line.
//
// It only runs when asked, and needs root (cgroups, namespaces):
//
//	SUPERVISE_SOAK=1 go test -count=1 -timeout 20m -run Soak -v ./integration/soak     # 2 minutes
//	go test -count=1 -timeout 30m -run Soak -v ./integration/soak -soak.duration=10m
//
// Figures are printed with t.Logf, never asserted; the checks are
// invariants, waited for with long deadlines, never timings.
package soak

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

var (
	durationFlag = flag.Duration("soak.duration", 0, "run the chaos soak for this long (default 2m with SUPERVISE_SOAK=1; 0 and no SUPERVISE_SOAK skips it)")
	seedFlag     = flag.Uint64("soak.seed", 0, "seed of the driver's choices (0: from the clock)")
	keepFlag     = flag.Bool("soak.keep", false, "keep the soak's directory (config, logs, the supervisor's log) even when it passes")
	noRemoveFlag = flag.Bool("soak.noremove", false, "reloads only change programs: none added or removed (to soak the rest while a removal bug is open)")
)

// defaultDuration is the soak's length with SUPERVISE_SOAK=1 and no flag:
// what .ci/run runs.
const defaultDuration = 2 * time.Minute

// binary is the supervise binary built for this run; supervisectl is a
// symlink to it beside it.
var binary, ctlBinary string

// soakDuration says how long to run, and whether to run at all.
func soakDuration() (time.Duration, bool) {
	if testing.Short() { // go test -short ./... is the quick pass
		return 0, false
	}
	if *durationFlag > 0 {
		return *durationFlag, true
	}
	if os.Getenv("SUPERVISE_SOAK") != "" && os.Getenv("SUPERVISE_SOAK") != "0" {
		return defaultDuration, true
	}
	return 0, false
}

func TestMain(m *testing.M) {
	flag.Parse()
	if _, on := soakDuration(); !on {
		os.Exit(m.Run()) // nothing to build: the soak skips
	}
	dir, err := os.MkdirTemp("", "supervise-soak-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "supervise")
	ctlBinary = filepath.Join(dir, "supervisectl")
	build := exec.Command("go", "build", "-o", binary, "../../cmd/supervise")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building supervise: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	if err := os.Symlink(binary, ctlBinary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
