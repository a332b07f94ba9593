package ctl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// ProjectSocketPath is the control socket of the dev runner of the project
// in dir (an absolute path), so that each project folder has its own
// supervisor: $XDG_RUNTIME_DIR/supervise/NAME-HASH.sock, else
// /run/supervise/ctl/… for root, else /tmp/supervise-<uid>/…, in a
// directory the server makes private (0700). NAME is the folder's base name (cut to
// 24 bytes, for people), HASH the first 16 hex digits of the SHA-256 of
// dir (for uniqueness).
func ProjectSocketPath(dir string) string {
	return filepath.Join(projectDir(os.Getenv, os.Getuid()), projectSocketName(dir))
}

func projectDir(getenv func(string) string, uid int) string {
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "supervise")
	}
	if uid == 0 {
		return rootProjectDir
	}
	return fallbackDir(uid)
}

// root's runtime directory, /run/supervise (0755), is shared with the
// sd_notify sockets (see notify): those must be reachable by programs
// running as other users, the control sockets by no one but root, so each
// has a subdirectory with its own mode, and /run/supervise itself holds
// none of them.
const (
	rootRunDir     = "/run/supervise"
	rootProjectDir = rootRunDir + "/ctl"
)

// makeParent makes the parent of root's project socket directory when
// missing (0755: the notify sockets' directory beside ours must be
// reachable by everyone).
func makeParent(dir string) error {
	if dir != rootProjectDir {
		return nil
	}
	if err := os.Mkdir(rootRunDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("control socket directory %s: %w", dir, err)
	}
	return nil
}

func projectSocketName(dir string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, filepath.Base(dir))
	if len(name) > 24 {
		name = name[:24]
	}
	return name + "-" + hex.EncodeToString(sum[:8]) + ".sock"
}

// FindProjectSocket looks from dir up to the root for a folder whose dev
// runner's socket exists, and returns that socket; "" when there is none,
// and the default socket applies. Any folder counts, not only one with a
// Procfile or supervise.toml: a runner of `-f Procfile.dev` (or a file of
// any name) keys its socket by that file's folder. The sockets live in a
// directory private to the user (or root's), so one found there is a
// runner of the user's own.
func FindProjectSocket(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if p := ProjectSocketPath(d); isSocket(p) {
			return p
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

func isSocket(path string) bool {
	st, err := os.Lstat(path)
	return err == nil && st.Mode().Type() == os.ModeSocket
}
