//go:build !linux

package pid1

import (
	"context"
	"errors"
)

// Run needs Linux (subreapers, sessions, /proc).
func Run(ctx context.Context, cfg Config) (int, error) {
	return 1, errors.ErrUnsupported
}

func IsListenShim() bool                   { return false }
func ListenShimMain() int                  { return 127 }
func ListenFDs([]string, int) (int, error) { return 0, nil }
