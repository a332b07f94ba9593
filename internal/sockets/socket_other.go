//go:build !linux

package sockets

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// socket makes a blocking, close-on-exec socket; without SOCK_CLOEXEC the
// fork lock keeps a concurrent fork from inheriting it.
func socket(domain, typ int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fd, err := unix.Socket(domain, typ, 0)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	return fd, err
}
