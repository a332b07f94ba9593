//go:build !linux

package logs

import "io"

// IsTerminal reports false: terminal detection is implemented for Linux.
func IsTerminal(w io.Writer) bool { return false }

// terminalSize: no terminal sizes here.
func terminalSize(w io.Writer) (WinSize, bool) { return WinSize{}, false }
