package logs

import "golang.org/x/sys/unix"

// oPath opens a directory to walk and hold it, without needing read
// permission on it.
const oPath = unix.O_PATH
