package ctl

import (
	"os"
	"path/filepath"
)

// DefaultSocketPath is where the control socket lives when nothing says
// otherwise: $SUPERVISE_SOCKET, else $XDG_RUNTIME_DIR/supervise.sock, else
// /run/supervise.sock for root, else /tmp/supervise-<uid>/supervise.sock,
// in a directory the server makes private (0700) and refuses to use when
// someone else made it.
func DefaultSocketPath() string {
	return socketPath(os.Getenv, os.Getuid())
}

func socketPath(getenv func(string) string, uid int) string {
	if p := getenv("SUPERVISE_SOCKET"); p != "" {
		return p
	}
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "supervise.sock")
	}
	if uid == 0 {
		return "/run/supervise.sock"
	}
	return filepath.Join(fallbackDir(uid), "supervise.sock")
}
