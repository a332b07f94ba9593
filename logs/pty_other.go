//go:build !linux

package logs

import (
	"errors"
	"os"
)

// openPty is Linux only here.
func openPty(ws *WinSize) (master, slave *os.File, err error) {
	return nil, nil, errors.New("pseudo-terminals for programs are supported on Linux only")
}

// CheckPtyMaster: no pseudo-terminal is handed over here.
func CheckPtyMaster(fd int) error {
	return errors.New("pseudo-terminals for programs are supported on Linux only")
}

// resizePty: no pseudo-terminals here.
func resizePty(m *os.File, ws WinSize) (changed, told bool, err error) {
	return false, false, errors.New("pseudo-terminals for programs are supported on Linux only")
}

// isPtyMaster: no pseudo-terminals here.
func isPtyMaster(f *os.File) bool { return false }
