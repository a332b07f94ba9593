//go:build !linux

package logs

import (
	"errors"
	"os"
)

const nonBlock = 0

func fcntlFlags(*os.File) (int, error) { return 0, errors.ErrUnsupported }
