//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// supervisePeer is the supervisor under test: `supervise run -c FILE`.
// label names another build measured beside it (-base in the scale run,
// -before otherwise); "" is the one under test.
type supervisePeer struct {
	bin, label string
	// twoPipes: a build without stderr = "stdout" (an older one), whose
	// programs always get two pipes.
	twoPipes bool
}

// mergesStreams reports whether the supervise at bin takes stderr =
// "stdout": `supervise check` of a config that sets it passes.
func mergesStreams(bin string) bool {
	dir, err := os.MkdirTemp("", "peers-check-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	conf := filepath.Join(dir, "supervise.toml")
	if err := os.WriteFile(conf, []byte("[program.p]\ncommand = [\"/bin/true\"]\nstderr = \"stdout\"\n"), 0o644); err != nil {
		return false
	}
	return exec.Command(bin, "check", "-c", conf).Run() == nil
}

func (s supervisePeer) name() string {
	if s.label != "" {
		return s.label
	}
	return "supervise"
}
func (s supervisePeer) needs() []string   { return []string{s.bin} }
func (s supervisePeer) crashNote() string { return `backoff initial = "0s"` }

func (s supervisePeer) setup(dir string, progs []program) ([]string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "[supervisor]\nsocket = %s\n", strconv.Quote(filepath.Join(dir, "supervise.sock")))
	for _, p := range progs {
		q := make([]string, len(p.argv))
		for i, a := range p.argv {
			q[i] = strconv.Quote(a)
		}
		fmt.Fprintf(&b, "\n[program.%s]\ncommand = [%s]\n", p.name, strings.Join(q, ", "))
		if p.crash {
			b.WriteString("backoff = { initial = \"0s\" }\n")
		}
		if p.logDir != "" {
			fmt.Fprintf(&b, "stdout = { console = %v, file = %s, max_size = %d, max_files = %d }\n",
				p.console, strconv.Quote(filepath.Join(p.logDir, p.name+".log")), logFileSize, logFilesKept)
		}
		if p.oneStream && !s.twoPipes {
			b.WriteString("stderr = \"stdout\"\n")
		}
		if p.readyLine != "" {
			fmt.Fprintf(&b, "ready_log_line = %s\n", strconv.Quote(p.readyLine))
		}
	}
	conf := filepath.Join(dir, "supervise.toml")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return []string{s.bin, "run", "-c", conf}, nil
}

// stopAll is SIGTERM: the graceful stop of everything, as in a container.
func (s supervisePeer) stopAll(t *tree, _ []program) error {
	return syscall.Kill(t.pid, syscall.SIGTERM)
}

func (s supervisePeer) shutdown(t *tree, _ []program) {
	if t.alive() {
		_ = syscall.Kill(t.pid, syscall.SIGTERM)
		if !t.waitRoot(60 * time.Second) {
			fmt.Fprintln(os.Stderr, "peers: warning: supervise did not stop within 60 s on SIGTERM; killing it (its cgroups may be left)")
		}
	}
}

// statusCmd is supervisectl, a link to the binary, as users run it.
func (s supervisePeer) statusCmd(t *tree, _ []program) []string {
	link := filepath.Join(t.dir, "supervisectl")
	if _, err := os.Lstat(link); err != nil {
		if err := os.Symlink(s.bin, link); err != nil {
			return nil
		}
	}
	return []string{link, "--socket", filepath.Join(t.dir, "supervise.sock"), "status", "--json"}
}
