//go:build !linux

package main

// releaseStartupMemory does nothing off Linux.
func releaseStartupMemory() error { return nil }

// releaseBinaryPages does nothing off Linux.
func releaseBinaryPages() error { return nil }
