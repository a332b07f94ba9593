//go:build !linux

package main

import "time"

// binaryPages does nothing off Linux.
type binaryPages struct{}

func newBinaryPages() *binaryPages { return &binaryPages{} }

func (*binaryPages) releaseStartup() error { return nil }

func (*binaryPages) release() error { return nil }

// afterQuiet is a runtime timer off Linux (d <= 0: not armed before a
// Reset).
func afterQuiet(d time.Duration, f func()) resetter {
	return stoppedUnless(time.AfterFunc(max(d, time.Hour), f), d)
}
