// Package sockets is socket activation, both ends: it parses the
// addresses a program's listen key names, binds them (the supervisor does,
// as root, before the program drops to its user) and writes and reads the
// environment of sd_listen_fds(3): LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES.
//
// The supervisor holds each socket for the program's whole life; every
// process of the program gets the same sockets at descriptors 3, 4, …, so
// connections wait in the kernel's backlog while it restarts instead of
// being refused.
package sockets
