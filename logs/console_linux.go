package logs

import (
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether w is a file open on a terminal: one that
// answers the TCGETS ioctl.
func IsTerminal(w io.Writer) bool {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return false
	}
	// SyscallConn rather than Fd: Fd would switch the file to blocking mode.
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var isTTY bool
	if err := rc.Control(func(fd uintptr) {
		_, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		isTTY = err == nil
	}); err != nil {
		return false
	}
	return isTTY
}

// terminalSize is the size of the terminal w is open on.
func terminalSize(w io.Writer) (WinSize, bool) {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return WinSize{}, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return WinSize{}, false
	}
	var ws *unix.Winsize
	var ioErr error
	if err := rc.Control(func(fd uintptr) {
		ws, ioErr = unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
	}); err != nil || ioErr != nil {
		return WinSize{}, false
	}
	return WinSize{Rows: ws.Row, Cols: ws.Col}, true
}
