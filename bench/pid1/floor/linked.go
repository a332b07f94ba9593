//go:build floorlinked

package main

// Built with -tags floorlinked, the floor links what supervise-init links
// (pid1 and all it imports: proc, net through internal/sockets, log/slog…)
// and uses none of it. Its difference from the plain floor is what those
// packages' initialisation and the larger binary cost every start, before
// an init does anything: a part of supervise-init's time that no change
// to the init's own code can take away.
import _ "github.com/supervise-dev/supervise/pid1"
