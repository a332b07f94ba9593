//go:build !linux

package logs

import "golang.org/x/sys/unix"

// oPath: without O_PATH, directories are opened for reading.
const oPath = unix.O_RDONLY
