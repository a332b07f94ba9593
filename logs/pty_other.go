//go:build !linux

package logs

import (
	"errors"
	"os"
)

// openPty is Linux only here.
func openPty() (master, slave *os.File, err error) {
	return nil, nil, errors.New("pseudo-terminals for programs are supported on Linux only")
}

// CheckPtyMaster: no pseudo-terminal is handed over here.
func CheckPtyMaster(fd int) error {
	return errors.New("pseudo-terminals for programs are supported on Linux only")
}
