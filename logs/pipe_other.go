//go:build !linux

package logs

import "os"

// setPipeSize does nothing: pipe sizes are a Linux fcntl.
func setPipeSize(*os.File, int) {}
