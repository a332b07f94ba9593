//go:build !linux

package main

import "time"

// binaryPages does nothing off Linux.
type binaryPages struct{}

func newBinaryPages() *binaryPages { return &binaryPages{} }

func (*binaryPages) releaseStartup() error { return nil }

func (*binaryPages) release() error { return nil }

// afterQuiet is a runtime timer off Linux.
func afterQuiet(d time.Duration, f func()) resetter { return time.AfterFunc(d, f) }
