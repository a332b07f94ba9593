//go:build linux && !amd64

package pid1

// Without the trampoline (written for amd64 only) the tap is not
// installed: SIGPIPE, SIGURG and SIGPROF are then not forwarded.
func tapTrampolineAddr() uintptr { return 0 }

const tapSupported = false
