//go:build linux && !amd64

package pid1

// Without the trampoline (written for amd64 only) the signals go through
// os/signal (see catchSignals).
func tapTrampolineAddr() uintptr { return 0 }

const tapSupported = false
