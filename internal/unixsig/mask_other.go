//go:build !linux

package unixsig

// StartUnblocked does nothing off Linux, where supervise runs no programs.
func StartUnblocked() error { return nil }
