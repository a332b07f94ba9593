//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// The three peers that supervise a directory of service directories, one
// supervisor process per program under a scanner: s6 (s6-svscan,
// s6-supervise, s6-log), runit (runsvdir, runsv, svlogd) and daemontools
// (svscan, supervise, multilog).

// scanDir writes every program's service directory under dir/services.
func scanDir(dir string, progs []program, helper string, logRun func(logDir string) (string, error)) (string, error) {
	scan := filepath.Join(dir, "services")
	for _, p := range progs {
		lr := ""
		if p.logDir != "" {
			var err error
			if lr, err = logRun(p.logDir); err != nil {
				return "", err
			}
		}
		if _, err := writeServiceDir(scan, p, helper, lr); err != nil {
			return "", fmt.Errorf("service directory %s: %w", p.name, err)
		}
	}
	return scan, nil
}

// s6Peer: s6-svscan on the scan directory.
type s6Peer struct{ helper string }

func (s6Peer) name() string { return "s6" }
func (s6Peer) needs() []string {
	return []string{"s6-svscan", "s6-supervise", "s6-svscanctl", "s6-log"}
}
func (s6Peer) crashNote() string {
	return "no setting: s6-supervise spawns ./run at most once a second"
}

func (p s6Peer) setup(dir string, progs []program) ([]string, error) {
	scan, err := scanDir(dir, progs, p.helper, func(logDir string) (string, error) {
		return fmt.Sprintf("s6-log n%d s%d %s", logFilesKept, logFileSize, logDir), nil
	})
	if err != nil {
		return nil, err
	}
	// -c: room for every service and its logger (the default is 1000).
	return []string{"s6-svscan", "-c", fmt.Sprint(2*len(progs) + 10), scan}, nil
}

// stopAll is s6-svscanctl -t: s6-svscan brings every service down (SIGTERM
// to each s6-supervise) and exits once they have.
func (p s6Peer) stopAll(t *tree, _ []program) error {
	return run(t.dir, "s6-svscanctl", "-t", filepath.Join(t.dir, "services"))
}

func (p s6Peer) shutdown(t *tree, progs []program) {
	if t.alive() {
		_ = run(t.dir, "s6-svscanctl", "-t", filepath.Join(t.dir, "services"))
		t.waitRoot(30 * time.Second)
	}
}

// runitPeer: runsvdir on the scan directory.
type runitPeer struct{ helper string }

func (runitPeer) name() string    { return "runit" }
func (runitPeer) needs() []string { return []string{"runsvdir", "runsv", "sv", "svlogd"} }
func (runitPeer) crashNote() string {
	return "no setting: runsv waits a second before restarting a ./run that ran less than one"
}

func (p runitPeer) setup(dir string, progs []program) ([]string, error) {
	scan, err := scanDir(dir, progs, p.helper, func(logDir string) (string, error) {
		// svlogd reads its rotation settings from the log directory.
		conf := fmt.Sprintf("s%d\nn%d\n", logFileSize, logFilesKept)
		if err := os.WriteFile(filepath.Join(logDir, "config"), []byte(conf), 0o644); err != nil {
			return "", err
		}
		return "svlogd " + logDir, nil
	})
	if err != nil {
		return nil, err
	}
	return []string{"runsvdir", scan}, nil
}

// stopAll is `sv down` on every service (one sv for all): runsv sends
// each program TERM and CONT. runit has no single stop-everything command
// short of runsvdir's SIGHUP, which leaves the services to their runsv.
func (p runitPeer) stopAll(t *tree, progs []program) error {
	return run(t.dir, append([]string{"sv", "down"}, serviceDirs(filepath.Join(t.dir, "services"), progs, false)...)...)
}

func (p runitPeer) shutdown(t *tree, progs []program) {
	if t.alive() {
		// sv exit: down, then runsv exits (after its logger, when there is one).
		_ = run(t.dir, append([]string{"sv", "-w", "10", "exit"}, serviceDirs(filepath.Join(t.dir, "services"), progs, false)...)...)
		_ = syscall.Kill(t.pid, syscall.SIGHUP) // runsvdir: TERM to each runsv, then exit
		t.waitRoot(30 * time.Second)
	}
}

// daemontoolsPeer: svscan on the scan directory.
type daemontoolsPeer struct{ helper string }

func (daemontoolsPeer) name() string { return "daemontools" }
func (daemontoolsPeer) needs() []string {
	return []string{"svscan", "/usr/bin/supervise", "svc", "multilog"}
}
func (daemontoolsPeer) crashNote() string {
	return "no setting: supervise sleeps a second after each start of ./run"
}

func (p daemontoolsPeer) setup(dir string, progs []program) ([]string, error) {
	scan, err := scanDir(dir, progs, p.helper, func(logDir string) (string, error) {
		return fmt.Sprintf("multilog s%d n%d %s", logFileSize, logFilesKept, logDir), nil
	})
	if err != nil {
		return nil, err
	}
	return []string{"svscan", scan}, nil
}

// stopAll is `svc -d` on every service (one svc for all).
func (p daemontoolsPeer) stopAll(t *tree, progs []program) error {
	return run(t.dir, append([]string{"svc", "-d"}, serviceDirs(filepath.Join(t.dir, "services"), progs, false)...)...)
}

func (p daemontoolsPeer) shutdown(t *tree, progs []program) {
	if t.alive() {
		// Down and exit every supervise (loggers too: they end on EOF),
		// then svscan, which has no stop command of its own.
		_ = run(t.dir, append([]string{"svc", "-dx"}, serviceDirs(filepath.Join(t.dir, "services"), progs, true)...)...)
		_ = syscall.Kill(t.pid, syscall.SIGTERM)
		t.waitRoot(30 * time.Second)
	}
}

func (p s6Peer) statusCmd(*tree, []program) []string { return nil }

func (p runitPeer) statusCmd(t *tree, progs []program) []string {
	return append([]string{"sv", "status"}, serviceDirs(filepath.Join(t.dir, "services"), progs, false)...)
}

func (p daemontoolsPeer) statusCmd(t *tree, progs []program) []string {
	return append([]string{"svstat"}, serviceDirs(filepath.Join(t.dir, "services"), progs, false)...)
}
