package integration

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// An upgrade in place sent (SIGUSR2) while a stop of many programs
// settles and clients poll the status: every command under way ends with
// an answer (or carries on with the new binary), none loses its
// connection, and the supervisor never has to give up waiting for them.
func TestUpgradeDuringStopAndStatusPolls(t *testing.T) {
	const slow, kept = 150, 50
	// slow takes a moment to stop: its trap outlives the stop signal.
	toml := fmt.Sprintf(`
[program.slow]
command = ["sh", "-c", "trap 'sleep 1; exit 0' TERM; sleep 3600 & wait $!"]
instances = %d
stop_timeout = "30s"

[program.kept]
command = ["sh", "-c", "exec sleep 3600"]
instances = %d
`, slow, kept)
	d, exe := upgradeDaemon(t, toml)
	eventually(t, "every program running", 3*time.Minute, func() bool {
		st := d.status()
		n := 0
		for _, p := range st {
			if p.State == "Running" {
				n++
			}
		}
		return n == slow+kept
	})

	// Clients that poll all along: status --json reads every running
	// program's cgroup figures; the plain status asks version too.
	var (
		mu       sync.Mutex
		failures []string
		calls    int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	poll := func(args ...string) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			out, code := d.ctl(args...)
			mu.Lock()
			calls++
			if code != 0 {
				failures = append(failures, fmt.Sprintf("supervisectl %s: exit %d: %s", strings.Join(args, " "), code, tail(out, 3)))
			}
			mu.Unlock()
		}
	}
	for range 3 {
		wg.Add(1)
		go poll("status", "--json")
	}
	wg.Add(2)
	go poll("status")
	go poll("version")
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}()

	stopCmd := d.ctlBackground("stop", "slow")
	eventually(t, "the stop under way", time.Minute, func() bool {
		for _, p := range d.status() {
			if p.State == "Stopping" {
				return true
			}
		}
		return false
	})

	// Upgrades, each sent as the soak's driver does, again while one is
	// refused (a stop under way, the workers busy): to v2, back to v1,
	// to v2 again, so that the polls meet more than one exec.
	upgraded := 0
	for i, build := range []string{"v2", "v1", "v2"} {
		installBinary(t, upgradeBuild(t, build), exe, 0o755)
		deadline := time.Now().Add(3 * time.Minute)
		for {
			if time.Now().After(deadline) {
				t.Fatalf("upgrade %d: still refused after 3 minutes", i+1)
			}
			outcomes := strings.Count(d.stderr.String(), "upgrade refused") + strings.Count(d.stderr.String(), "upgraded in place")
			d.signal(syscall.SIGUSR2)
			eventually(t, "the upgrade's outcome logged", 3*time.Minute, func() bool {
				s := d.stderr.String()
				return strings.Count(s, "upgrade refused")+strings.Count(s, "upgraded in place") > outcomes
			})
			if strings.Count(d.stderr.String(), "upgraded in place") > upgraded {
				upgraded++
				break
			}
		}
	}
	if code := stopCmd.wait(t, 3*time.Minute); code != 0 {
		t.Errorf("supervisectl stop slow across the upgrades: exit %d: %s", code, stopCmd.errb.String())
	}
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d client calls during %d upgrades", calls, upgraded)
	for _, f := range failures {
		t.Error(f)
	}
	if strings.Contains(d.stderr.String(), "commands did not end before the upgrade") {
		t.Errorf("the supervisor dropped commands at an exec:\n%s", grepLines(d.stderr.String(), "commands did not end"))
	}
	st := d.status()
	for name, p := range st {
		if strings.HasPrefix(name, "slow") && p.State != "Stopped" {
			t.Errorf("%s is %s after the stop, want Stopped", name, p.State)
		}
		if strings.HasPrefix(name, "kept") && p.State != "Running" {
			t.Errorf("%s is %s, want Running", name, p.State)
		}
	}
}

// An upgrade waits (up to 30 s) for busy workers before it is refused;
// a SIGHUP or SIGTERM sent meanwhile is acted on at once, not after it.
func TestSignalsDoNotWaitBehindAnUpgrade(t *testing.T) {
	dir := t.TempDir()
	gate := dir + "/hook-may-end"
	// slow's pre_start holds a worker (and so the freeze) until the test
	// lets it end.
	toml := fmt.Sprintf(`
[supervisor]
watch_config = false # the reload is the SIGHUP's

[program.keep]
command = ["sleep", "3600"]

[program.slow]
command = ["sleep", "3600"]
autostart = false

[program.slow.hooks.pre_start]
command = ["sh", "-c", "while [ ! -e %s ]; do sleep 0.1; done"]
timeout = "5m"
`, gate)
	d, _ := upgradeDaemon(t, toml)
	eventually(t, "keep running", time.Minute, func() bool { return d.status()["keep"].State == "Running" })
	start := d.ctlBackground("start", "--no-wait", "slow")
	if code := start.wait(t, time.Minute); code != 0 {
		t.Fatalf("start slow: exit %d: %s", code, start.errb.String())
	}
	eventually(t, "slow's pre_start under way", time.Minute, func() bool { return d.status()["slow"].State == "Starting" })

	d.signal(syscall.SIGUSR2)
	eventually(t, "the upgrade waiting for the workers", time.Minute, func() bool {
		return strings.Contains(d.stderr.String(), "SIGUSR2: upgrading in place")
	})
	// A reload by SIGHUP meanwhile: a program added.
	cfg := d.dir + "/supervise.toml"
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, "\n[program.added]\ncommand = [\"sleep\", \"3600\"]\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	d.signal(syscall.SIGHUP)
	eventually(t, "the SIGHUP's reload", 2*time.Minute, func() bool {
		return strings.Contains(d.stderr.String(), "config reloaded")
	})
	if s := d.stderr.String(); strings.Contains(s, "upgrade refused") {
		t.Errorf("the SIGHUP's reload waited for the upgrade to be refused:\n%s", grepLines(s, "upgrad"))
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}
