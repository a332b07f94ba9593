package sockets

import "golang.org/x/sys/unix"

// socket makes a blocking, close-on-exec socket.
func socket(domain, typ int) (int, error) {
	return unix.Socket(domain, typ|unix.SOCK_CLOEXEC, 0)
}
