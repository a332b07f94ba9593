// Package sockowner tells which local user holds the other end of a TCP
// connection.
//
// On loopback every local user connects from the same address, so an
// address cannot tell a probe of root's from a flood of another user's.
// The kernel knows who made each socket: when the client is on this host
// (in the same network namespace), Owner asks it (sock_diag) for the uid
// of the socket at the connection's far end.
package sockowner
