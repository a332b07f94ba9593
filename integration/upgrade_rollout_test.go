package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A rolling restart cut short by an upgrade in place is finished by the
// new binary: each instance gets one new process, and no more of them are
// down at once than the rollout allows.

// rollingUpgradeConfig is web, 4 instances each ready 2 s after it starts
// (so a rollout takes seconds), one replaced at a time; each start is
// appended to starts as "INSTANCE PID".
func rollingUpgradeConfig(starts string) string {
	return fmt.Sprintf(`
[program.web]
command = ["bash", "-c", "echo \"$SUPERVISE_INSTANCE $$\" >> %s; sleep 2; echo ready; exec sleep infinity"]
instances = 4
ready_log_line = "^ready$"
[program.web.rollout]
max_unavailable = 1
timeout = "2m"
`, starts)
}

// startsOf counts the processes each instance of web was started with.
func startsOf(t *testing.T, file string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			n["web:"+f[0]]++
		}
	}
	return n
}

// rollThroughUpgrade runs web, restarts it with args, upgrades once the
// second instance's replacement has begun, and returns what it needs to
// check the outcome.
func rollThroughUpgrade(t *testing.T, restart func(d *daemon)) (d *daemon, starts string, s *sampler) {
	t.Helper()
	starts = filepath.Join(t.TempDir(), "starts")
	d, _ = upgradeDaemon(t, rollingUpgradeConfig(starts))
	keys := []string{"web:0", "web:1", "web:2", "web:3"}
	eventually(t, "the 4 instances ready", 60*time.Second, func() bool {
		st := d.healthStatus()
		for _, k := range keys {
			if !isReady(st[k]) {
				return false
			}
		}
		return true
	})
	s = startSampler(d)
	restart(d)
	eventually(t, "the rollout at its second instance", 60*time.Second, func() bool {
		n := startsOf(t, starts)
		return n["web:0"] == 2 && n["web:1"] == 2
	})
	d.upgrade("upgrade")
	return d, starts, s
}

// checkReplacedOnce waits for every instance to have had one new process,
// then checks that none had two and that no more than one was ever down.
func checkReplacedOnce(t *testing.T, d *daemon, starts string, s *sampler) {
	t.Helper()
	done := func() bool {
		n := startsOf(t, starts)
		st := d.healthStatus()
		for _, k := range []string{"web:0", "web:1", "web:2", "web:3"} {
			if n[k] < 2 || !isReady(st[k]) {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(60 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("the rollout was not finished after the upgrade: starts per instance %v, status %+v", startsOf(t, starts), d.healthStatus())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A second replacement would begin within a readiness or so.
	time.Sleep(3 * time.Second)
	minReady, samples := s.end()
	for k, c := range startsOf(t, starts) {
		if c != 2 {
			t.Errorf("%s started %d times, want 2 (its first process and one successor)", k, c)
		}
	}
	t.Logf("%d status samples; fewest ready: %d", samples, minReady)
	if samples == 0 || minReady < 3 {
		t.Errorf("ready instances dropped to %d (max_unavailable 1 of 4; %d samples)", minReady, samples)
	}
	if v := d.version(); len(v.Upgrades) != 1 || v.Upgrades[0].Error != "" {
		t.Errorf("upgrades: %+v", v.Upgrades)
	}
}

// TestUpgradeFinishesANoWaitRestart: `restart --no-wait web` returns at
// once; the upgrade lands in the middle of its rollout and the new binary
// replaces the instances it had not come to.
func TestUpgradeFinishesANoWaitRestart(t *testing.T) {
	d, starts, s := rollThroughUpgrade(t, func(d *daemon) {
		d.ctlOK("restart", "--no-wait", "web")
	})
	checkReplacedOnce(t, d, starts, s)
}

// TestUpgradeKeepsAWaitingRollingRestart: `restart web`, which waits,
// goes on through the upgrade and exits 0; each instance is replaced
// once, whether the client's resume or the carried rollout does it.
func TestUpgradeKeepsAWaitingRollingRestart(t *testing.T) {
	var restart *bgCtl
	d, starts, s := rollThroughUpgrade(t, func(d *daemon) {
		restart = d.ctlBackground("restart", "web")
	})
	if code := restart.wait(t, 120*time.Second); code != 0 {
		t.Fatalf("restart across the upgrade: exit %d: %s", code, restart.errb.String())
	}
	n := startsOf(t, starts)
	st := d.healthStatus()
	for _, k := range []string{"web:0", "web:1", "web:2", "web:3"} {
		if n[k] != 2 || !isReady(st[k]) {
			t.Errorf("restart returned with %s started %d times, ready %v", k, n[k], isReady(st[k]))
		}
	}
	checkReplacedOnce(t, d, starts, s)
}
