//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// supervisordPeer is Supervisor's supervisord (Debian's `supervisor`),
// in the foreground with its own config and socket.
type supervisordPeer struct{}

func (supervisordPeer) name() string    { return "supervisord" }
func (supervisordPeer) needs() []string { return []string{"supervisord"} }
func (supervisordPeer) crashNote() string {
	return "startsecs=0, autorestart=true (an exit is then a normal exit, restarted at once)"
}

func (p supervisordPeer) setup(dir string, progs []program) ([]string, error) {
	var b strings.Builder
	sock := filepath.Join(dir, "supervisord.sock")
	fmt.Fprintf(&b, "[unix_http_server]\nfile=%s\n\n", sock)
	fmt.Fprintf(&b, "[supervisord]\nnodaemon=true\nlogfile=%s\npidfile=%s\nchildlogdir=%s\n",
		filepath.Join(dir, "supervisord.log"), filepath.Join(dir, "supervisord.pid"), dir)
	// Three pipes and two log files per program: raise the fd floor so
	// a thousand programs fit.
	b.WriteString("minfds=16384\n")
	if os.Geteuid() == 0 {
		b.WriteString("user=root\n") // says we mean it, instead of a warning
	}
	b.WriteString("\n[rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n")
	fmt.Fprintf(&b, "\n[supervisorctl]\nserverurl=unix://%s\n", sock)
	for _, pr := range progs {
		fmt.Fprintf(&b, "\n[program:%s]\ncommand=%s\ndirectory=%s\n", pr.name, shellJoin(pr.argv), dir)
		if pr.crash {
			b.WriteString("startsecs=0\nautorestart=true\n")
		}
		if pr.logDir != "" {
			fmt.Fprintf(&b, "stdout_logfile=%s\nstdout_logfile_maxbytes=%d\nstdout_logfile_backups=%d\n",
				filepath.Join(pr.logDir, pr.name+".log"), logFileSize, logFilesKept)
		}
	}
	conf := filepath.Join(dir, "supervisord.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return []string{"supervisord", "-n", "-c", conf}, nil
}

// stopAll is SIGTERM: supervisord stops every program, then exits.
func (supervisordPeer) stopAll(t *tree, _ []program) error {
	return syscall.Kill(t.pid, syscall.SIGTERM)
}

func (supervisordPeer) shutdown(t *tree, _ []program) {
	if t.alive() {
		_ = syscall.Kill(t.pid, syscall.SIGTERM)
		t.waitRoot(60 * time.Second)
	}
}

func (supervisordPeer) statusCmd(t *tree, _ []program) []string {
	return []string{"supervisorctl", "-c", filepath.Join(t.dir, "supervisord.conf"), "status"}
}
