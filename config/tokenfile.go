package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxTokenBytes bounds a token file: a token is a line, not a document.
const maxTokenBytes = 4 << 10

// ReadTokenFile reads the bearer token of the HTTP listener's control
// verbs from path. The file must be a regular file (not a symlink: it is
// opened with O_NOFOLLOW), owned by root or by this process's user, and
// readable by nobody else (no group or other bits), since whoever reads
// it can stop every program. The token is its content, trimmed.
func ReadTokenFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return "", fmt.Errorf("%s is a symlink; name the file itself", path)
		}
		return "", fmt.Errorf("opening the token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a regular file", path)
	case !ok:
		return "", fmt.Errorf("%s: cannot tell its owner", path)
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		return "", fmt.Errorf("%s is owned by uid %d; it must be root's or the supervisor's (uid %d)", path, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("%s has mode %04o: others can read the token; chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	if len(b) > maxTokenBytes {
		return "", fmt.Errorf("%s is over %d bytes; a token is one line", path, maxTokenBytes)
	}
	tok := string(bytes.TrimSpace(b))
	switch {
	case len(tok) < 16:
		return "", fmt.Errorf("%s holds a token of %d bytes; use at least 16 (head -c 32 /dev/urandom | base64)", path, len(tok))
	case bytes.ContainsAny([]byte(tok), " \t\r\n"):
		return "", fmt.Errorf("%s holds more than one word; the token is one", path)
	}
	return tok, nil
}
