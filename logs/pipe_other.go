//go:build !linux

package logs

import (
	"errors"
	"os"
)

// setPipeSize does nothing: pipe sizes are a Linux fcntl.
func setPipeSize(*os.File, int) {}

// unread cannot tell here: a pump then flushes after every read, the
// ones that filled its buffer too.
func unread(uintptr) (int, error) { return 0, errors.ErrUnsupported }
