//go:build !linux

package main

import (
	"errors"
	"os"
)

// writeSealed: an upgrade in place is Linux only (memfd, the runtime).
func writeSealed([]byte) (*os.File, error) { return nil, errors.ErrUnsupported }

// keepParentDeathSignal: there is no such setting but on Linux.
func keepParentDeathSignal() {}
