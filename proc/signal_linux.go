package proc

import (
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// SignalName is the short upper-case name of sig ("TERM"), or its number.
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return strings.TrimPrefix(n, "SIG")
	}
	return strconv.Itoa(int(sig))
}
