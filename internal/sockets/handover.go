package sockets

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// File is the held descriptor itself, for a hand-over to a new binary
// across an execve; the Socket still owns it.
func (sk *Socket) File() *os.File { return sk.file }

// Adopt holds f, a socket inherited across an execve, as the Socket of s.
// It checks that f is a socket of s's type and, for a unix socket, that
// the file at s's path is still the one it is bound to (Close removes
// only that one).
func Adopt(s Spec, f *os.File) (*Socket, error) {
	fd := int(f.Fd())
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return nil, fmt.Errorf("adopting %s: descriptor %d is not a socket: %w", s, fd, err)
	}
	want := unix.SOCK_STREAM
	if !s.Stream() {
		want = unix.SOCK_DGRAM
	}
	if typ != want {
		return nil, fmt.Errorf("adopting %s: descriptor %d is a socket of another type", s, fd)
	}
	unix.CloseOnExec(fd)
	sk := &Socket{spec: s, file: f}
	if s.Unix() {
		var st unix.Stat_t
		if err := unix.Lstat(s.Address, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK {
			sk.dev, sk.ino = uint64(st.Dev), uint64(st.Ino)
		}
	}
	return sk, nil
}
