//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// program is one thing for a supervisor to run.
type program struct {
	name string
	argv []string // argv[0] is an absolute path
	// crash: the program exits at once; use the supervisor's fastest
	// restart setting.
	crash bool
	// logDir: capture the program's stdout into files under logDir,
	// rotated at logFileSize, keeping every file the run writes.
	logDir string
	// console (supervise only): copy the output to the supervisor's
	// console too; readyLine (supervise only): a ready_log_line pattern.
	console   bool
	readyLine string
	// oneStream (supervise only): stderr = "stdout", one pipe for both
	// streams, so supervise holds one descriptor per program.
	oneStream bool
}

// logFileSize is where every log pipeline rotates: multilog's largest
// size, so that all of them rotate alike. logFilesKept is enough files
// that 256 MiB is never rotated away.
const (
	logFileSize  = 16777215
	logFilesKept = 64
)

// peer is one supervisor under test.
type peer interface {
	// name is the column of the table.
	name() string
	// needs lists the executables it runs, to tell whether it is installed.
	needs() []string
	// setup writes its configuration for progs under dir and returns the
	// command line that starts it (run in dir, see launch).
	setup(dir string, progs []program) ([]string, error)
	// stopAll is the request to stop every program; it returns once the
	// request was made (the caller watches the programs end).
	stopAll(t *tree, progs []program) error
	// shutdown ends the supervisor with its own means, best effort; the
	// caller then kills whatever is left (tree.close).
	shutdown(t *tree, progs []program)
	// crashNote says how it restarts a crashed program at its fastest.
	crashNote() string
	// statusCmd is the one command that reports the state of every
	// program, nil when there is none (s6: one s6-svstat per service).
	statusCmd(t *tree, progs []program) []string
}

// env is the environment of every supervisor: the same for all, and none
// of the caller's.
func env(dir string) []string {
	return []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir, "LANG=C.UTF-8"}
}

// writeServiceDir writes an s6/runit/daemontools service directory for p
// under scandir. When p runs the helper, ./run is a symlink to it and its
// arguments are in ./bench-args, so nothing sits between the supervisor
// and the measured program; any other program is started by a
// "#!/bin/sh exec …" script, the usual way. logRun, when p has a logDir,
// is the command line of ./log/run.
func writeServiceDir(scandir string, p program, helper string, logRun string) (string, error) {
	dir := filepath.Join(scandir, p.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if p.argv[0] == helper {
		if err := os.Symlink(helper, filepath.Join(dir, "run")); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, "bench-args"), []byte(strings.Join(p.argv[1:], "\n")+"\n"), 0o644); err != nil {
			return "", err
		}
	} else if err := writeScript(filepath.Join(dir, "run"), "exec "+shellJoin(p.argv)); err != nil {
		return "", err
	}
	if p.logDir != "" {
		if err := os.MkdirAll(filepath.Join(dir, "log"), 0o755); err != nil {
			return "", err
		}
		if err := writeScript(filepath.Join(dir, "log", "run"), "exec "+logRun); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func writeScript(path, body string) error {
	return os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755)
}

// shellJoin quotes argv for sh; the benchmark's arguments are plain
// paths and numbers, so this only guards against surprises.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-=:") == "" {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// serviceDirs lists the service directories of progs under scandir.
func serviceDirs(scandir string, progs []program, withLogs bool) []string {
	var out []string
	for _, p := range progs {
		out = append(out, filepath.Join(scandir, p.name))
		if withLogs && p.logDir != "" {
			out = append(out, filepath.Join(scandir, p.name, "log"))
		}
	}
	return out
}

func errorf(t *tree, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if tail := t.tail(); tail != "" {
		msg += "\n" + t.impl + " said:\n" + tail
	}
	return fmt.Errorf("%s: %s", t.impl, msg)
}

// configAge is how long a configuration exists before its supervisor
// starts. runsvdir ignores a service directory modified in the current
// second (it rescans a second later); in real use the configuration is
// older than that, so every peer gets the same head start.
const configAge = 1100 * time.Millisecond

// launch sets p up for progs in dir and starts it. The configuration is
// written configAge before the start; t0, when not nil, is set to the
// monotonic time just before the supervisor is forked.
func launch(p peer, dir string, progs []program, t0 *time.Duration) (*tree, error) {
	argv, err := p.setup(dir, progs)
	if err != nil {
		return nil, fmt.Errorf("%s: writing its configuration: %w", p.name(), err)
	}
	time.Sleep(configAge)
	if t0 != nil {
		*t0 = monotonic()
	}
	return startRoot(p.name(), dir, argv, env(dir))
}
