package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// writeSealed puts data in a memfd sealed against any change: the new
// binary reads exactly what was written, and nobody can alter it.
func writeSealed(data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("supervise-upgrade-state", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("creating the state memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "supervise-upgrade-state")
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the state: %w", err)
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("sealing the state: %w", err)
	}
	return f, nil
}
