//go:build !linux

package ctl

import (
	"errors"
	"net"
)

// peerOf cannot identify peers off Linux, so every connection is refused.
func peerOf(net.Conn) peer { return peer{err: errors.ErrUnsupported} }
