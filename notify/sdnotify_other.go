//go:build !linux

package notify

import (
	"errors"
	"net"
	"os"
)

const (
	oobSize  = 1024
	msgTrunc = 0
)

// passCred is Linux-only; elsewhere senders are not identified.
func passCred(*net.UnixConn) error { return nil }

func parseOOB([]byte) (pid, uid, gid int) { return 0, 0, 0 }

func checkSocket(*os.File, string) error {
	return errors.New("a notify socket cannot be handed over on this system")
}

func monotonicNow() int64 { return 0 }

func queued(*net.UnixConn) bool { return false }
