//go:build linux && amd64

package pid1

// tapTrampoline is the signal handler of sigtap_linux_amd64.s; it is never
// called from Go, only its address is taken (tapTrampolineAddr).
func tapTrampoline()

func tapTrampolineAddr() uintptr

const tapSupported = true
